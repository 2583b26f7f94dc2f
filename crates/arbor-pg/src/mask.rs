//! A connection string as messages show it: every password hidden, in every
//! form libpq (and the driver) accepts.
//!
//! - URLs: the password of `user:password@`, and the value of every query
//!   parameter whose name, percent-decoded, holds `password` in any case
//!   (`?password=…`, `&sslpassword=…`, `?pass%77ord=…`).
//! - `key=value` strings: the value of every such key, with or without
//!   spaces around `=`, quoted (`'two words'`, escaped quotes `\'` and
//!   backslashes inside) or not (backslash escapes there too).
//!
//! What cannot be parsed is hidden from the first doubtful point on:
//! showing too little of an address is a nuisance, showing a password is a leak.

/// What stands for a hidden value.
const HIDDEN: &str = "***";

/// True when a parameter named `key` holds a secret.
fn secret_key(key: &str) -> bool {
    key.to_ascii_lowercase().contains("password")
}

/// The connection string without its passwords (see the module docs).
pub(crate) fn redact(conn: &str) -> String {
    let conn = conn.trim();
    match conn.split_once("://") {
        Some((scheme, rest)) if !scheme.contains(char::is_whitespace) && !scheme.contains('=') => {
            format!("{scheme}://{}", redact_url_rest(rest))
        }
        _ => redact_key_values(conn),
    }
}

/// The part of a URL after `scheme://`.
fn redact_url_rest(rest: &str) -> String {
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    // libpq ends the user part at an `@`; a password with an unencoded `/`
    // or `@` must not slip out, so the last `@` before the query counts.
    let mut out = match before_query.rfind('@') {
        Some(at) => {
            let (userinfo, host) = before_query.split_at(at);
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{user}:{HIDDEN}{host}"),
                None => before_query.to_owned(),
            }
        }
        None => before_query.to_owned(),
    };
    if let Some(q) = query {
        out.push('?');
        let params: Vec<String> = q
            .split('&')
            .map(|p| {
                let (k, _) = p.split_once('=').unwrap_or((p, ""));
                if secret_key(&percent_decode(k)) {
                    format!("{k}={HIDDEN}")
                } else {
                    p.to_owned()
                }
            })
            .collect();
        out.push_str(&params.join("&"));
    }
    out
}

/// `%XX` decoded (invalid sequences kept as they are).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `key = value` pairs, each value hidden when its key is a secret's.
fn redact_key_values(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    loop {
        let start = i;
        skip_ws(&mut i);
        out.push_str(&s[start..i]);
        if i >= b.len() {
            return out;
        }
        let key_start = i;
        while i < b.len() && b[i] != b'=' && !b[i].is_ascii_whitespace() {
            i += 1;
        }
        let key = &s[key_start..i];
        skip_ws(&mut i);
        if i >= b.len() || b[i] != b'=' {
            // Not `key = value`: nothing after this point is shown.
            out.push_str(HIDDEN);
            return out;
        }
        i += 1;
        skip_ws(&mut i);
        out.push_str(&s[key_start..i]);
        let value_start = i;
        let closed = if i < b.len() && b[i] == b'\'' {
            i += 1;
            loop {
                match b.get(i) {
                    None => break false,
                    Some(b'\\') => i += 2,
                    Some(b'\'') => {
                        i += 1;
                        break true;
                    }
                    Some(_) => i += 1,
                }
            }
        } else {
            while i < b.len() && !b[i].is_ascii_whitespace() {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            true
        };
        let i_end = i.min(b.len());
        if !closed {
            out.push_str(HIDDEN);
            return out;
        }
        if secret_key(key) {
            out.push_str(HIDDEN);
        } else {
            out.push_str(&s[value_start..i_end]);
        }
        i = i_end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each form libpq accepts, the secret in it, and how it is shown.
    const CASES: &[(&str, &str, &str)] = &[
        ("postgres://u:secret@db.example:5432/arbor", "secret", "postgres://u:***@db.example:5432/arbor"),
        ("postgresql://u:p%40ss@h/db", "p%40ss", "postgresql://u:***@h/db"),
        ("postgres://u:pa/ss@h/db", "pa/ss", "postgres://u:***@h/db"),
        ("postgres://u:pa@ss@h/db", "pa@ss", "postgres://u:***@h/db"),
        ("postgres://u:@h/db", "", "postgres://u:***@h/db"),
        ("postgres://u@h/db?password=secret", "secret", "postgres://u@h/db?password=***"),
        (
            "postgres://u@h/db?sslmode=require&password=secret&x=1",
            "secret",
            "postgres://u@h/db?sslmode=require&password=***&x=1",
        ),
        ("postgres://u@h/db?pass%77ord=secret", "secret", "postgres://u@h/db?pass%77ord=***"),
        ("postgres://u@h/db?sslpassword=secret", "secret", "postgres://u@h/db?sslpassword=***"),
        ("postgres:///arbor?host=/tmp&password=secret", "secret", "postgres:///arbor?host=/tmp&password=***"),
        ("host=/tmp user=u password=secret dbname=d", "secret", "host=/tmp user=u password=*** dbname=d"),
        ("host=/tmp password = secret dbname=d", "secret", "host=/tmp password = *** dbname=d"),
        ("password ='two words' user=u", "two words", "password =*** user=u"),
        ("password='it\\'s \\\\ a secret' user=u", "a secret", "password=*** user=u"),
        ("password=it\\ secret user=u", "secret", "password=*** user=u"),
        ("user=u sslpassword=secret", "secret", "user=u sslpassword=***"),
        ("user=u Password=secret", "secret", "user=u Password=***"),
        ("user=u password='unterminated secret", "secret", "user=u password=***"),
        ("user=u password secret", "secret", "user=u ***"),
        ("  password=secret  ", "secret", "password=***"),
    ];

    #[test]
    fn every_form_of_password_is_hidden() {
        for (conn, secret, shown) in CASES {
            let got = redact(conn);
            assert_eq!(&got, shown, "{conn}");
            if !secret.is_empty() {
                assert!(!got.contains(secret), "{conn} shows {secret}: {got}");
            }
        }
    }

    #[test]
    fn addresses_without_a_password_are_shown_whole() {
        for conn in [
            "postgres://u@db/arbor?sslmode=disable",
            "postgres://u@%2Ftmp%2Fx/db",
            "postgres:///arbor",
            "host=/tmp user=u dbname='my db'",
        ] {
            assert_eq!(redact(conn), conn);
        }
    }
}
