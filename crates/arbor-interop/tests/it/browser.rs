//! The HTML page in a real browser.
