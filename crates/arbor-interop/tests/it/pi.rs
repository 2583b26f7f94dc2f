//! Every imported session opens in pi with the context Arbor builds.
