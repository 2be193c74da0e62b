//! NBD URIs (the NetworkBlockDevice `doc/uri.md` scheme, as libnbd's
//! `nbd_connect_uri` accepts them): `nbd://HOST[:PORT][/EXPORT]` for TCP and
//! `nbd+unix:///[EXPORT]?socket=PATH` for a Unix socket.
//!
//! The export name is the path without its first `/`, percent-decoded, so
//! `nbd://h/` and `nbd://h` both name the default export `""` and
//! `nbd://h//abs` names `/abs`. TLS (`nbds`), vsock, user info, fragments
//! and query parameters other than `socket` are refused with an error that
//! says which part is unsupported, rather than silently ignored.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// The IANA port for NBD, used when a TCP URI names none.
pub const DEFAULT_PORT: u16 = 10809;

/// Where the server listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    /// A host name or IP literal (without IPv6 brackets) and a port.
    Tcp {
        /// Host name or address.
        host: String,
        /// TCP port.
        port: u16,
    },
    /// A Unix-domain socket path.
    Unix(PathBuf),
}

/// A parsed NBD URI: a server address and an export name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NbdUri {
    /// Where to connect.
    pub address: Address,
    /// The export to open (`""` is the server's default export).
    pub export: String,
}

/// Why a string is not a usable NBD URI.
#[derive(Debug, thiserror::Error)]
#[error("invalid NBD URI {uri:?}: {reason}")]
pub struct UriError {
    uri: String,
    reason: String,
}

impl FromStr for NbdUri {
    type Err = UriError;

    fn from_str(uri: &str) -> Result<Self, UriError> {
        parse(uri).map_err(|reason| UriError { uri: uri.to_string(), reason })
    }
}

fn parse(uri: &str) -> Result<NbdUri, String> {
    let (scheme, rest) = uri
        .split_once("://")
        .ok_or("expected nbd://HOST[:PORT][/EXPORT] or nbd+unix:///EXPORT?socket=PATH")?;
    let unix = match scheme.to_ascii_lowercase().as_str() {
        "nbd" => false,
        "nbd+unix" => true,
        "nbds" | "nbds+unix" | "nbds+vsock" => return Err(format!("TLS ({scheme}://) is not supported")),
        "nbd+vsock" => return Err("vsock (nbd+vsock://) is not supported".into()),
        _ => return Err(format!("unknown scheme {scheme:?} (expected nbd or nbd+unix)")),
    };
    if rest.contains('#') {
        return Err("fragments (#...) are not allowed".into());
    }
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, Some(query)),
        None => (rest, None),
    };
    let (authority, path) = match rest.find('/') {
        Some(slash) => (&rest[..slash], &rest[slash + 1..]),
        None => (rest, ""),
    };
    let export = percent_decode(path).map_err(|e| format!("export name: {e}"))?;

    let mut socket = None;
    for pair in query.into_iter().flat_map(|q| q.split('&')).filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "socket" => socket = Some(percent_decode(value).map_err(|e| format!("socket path: {e}"))?),
            _ => return Err(format!("unsupported query parameter {key:?} (only socket= is supported)")),
        }
    }

    if authority.contains('@') {
        return Err("user names (USER@HOST) are not supported".into());
    }
    let address = if unix {
        if !authority.is_empty() {
            return Err(format!(
                "nbd+unix URIs take no host (found {authority:?}); write nbd+unix:///EXPORT?socket=PATH"
            ));
        }
        match socket {
            Some(path) if !path.is_empty() => Address::Unix(PathBuf::from(path)),
            _ => return Err("nbd+unix needs ?socket=PATH".into()),
        }
    } else {
        if socket.is_some() {
            return Err("socket= is only valid with nbd+unix://".into());
        }
        let (host, port) = split_host_port(authority)?;
        Address::Tcp { host, port }
    };
    Ok(NbdUri { address, export })
}

/// Splits `host`, `host:port`, `[v6]` or `[v6]:port`.
fn split_host_port(authority: &str) -> Result<(String, u16), String> {
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let (host, after) = bracketed.split_once(']').ok_or("unclosed '[' in the IPv6 host")?;
        match after {
            "" => (host, None),
            _ => match after.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None => return Err(format!("unexpected {after:?} after the IPv6 host")),
            },
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, _)) if host.contains(':') => {
                return Err("IPv6 hosts must be in brackets, e.g. nbd://[::1]:10809/".into())
            }
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("missing host (nbd://HOST[:PORT][/EXPORT])".into());
    }
    let port = match port {
        None | Some("") => DEFAULT_PORT,
        Some(port) => match port.parse::<u16>() {
            Ok(p) if p != 0 => p,
            _ => return Err(format!("bad port {port:?} (expected 1-65535)")),
        },
    };
    Ok((host.to_string(), port))
}

/// Decodes `%XX` escapes; the result must be UTF-8 (export names are
/// UTF-8 on the wire).
fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).ok_or(format!("truncated escape at byte {i}"))?;
            let hex = std::str::from_utf8(hex).map_err(|_| format!("bad escape at byte {i}"))?;
            let byte = u8::from_str_radix(hex, 16).map_err(|_| format!("bad escape %{hex} at byte {i}"))?;
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "not UTF-8 after percent-decoding".to_string())
}

/// Escapes everything but unreserved characters and `/`.
fn percent_encode(s: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            write!(out, "{}", b as char)?;
        } else {
            write!(out, "%{b:02X}")?;
        }
    }
    Ok(())
}

impl fmt::Display for NbdUri {
    /// The canonical form, which parses back to the same value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.address {
            Address::Tcp { host, port } => {
                if host.contains(':') {
                    write!(f, "nbd://[{host}]")?;
                } else {
                    write!(f, "nbd://{host}")?;
                }
                if *port != DEFAULT_PORT {
                    write!(f, ":{port}")?;
                }
                f.write_str("/")?;
                percent_encode(&self.export, f)
            }
            Address::Unix(path) => {
                f.write_str("nbd+unix:///")?;
                percent_encode(&self.export, f)?;
                f.write_str("?socket=")?;
                percent_encode(&path.to_string_lossy(), f)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(host: &str, port: u16, export: &str) -> NbdUri {
        NbdUri { address: Address::Tcp { host: host.into(), port }, export: export.into() }
    }

    #[test]
    fn tcp_forms() {
        assert_eq!("nbd://example.com".parse::<NbdUri>().unwrap(), tcp("example.com", 10809, ""));
        assert_eq!("nbd://example.com/".parse::<NbdUri>().unwrap(), tcp("example.com", 10809, ""));
        assert_eq!("nbd://10.0.0.1:1234/disk".parse::<NbdUri>().unwrap(), tcp("10.0.0.1", 1234, "disk"));
        assert_eq!("nbd://[::1]:99/a%20b".parse::<NbdUri>().unwrap(), tcp("::1", 99, "a b"));
        assert_eq!("nbd://[fe80::1]/".parse::<NbdUri>().unwrap(), tcp("fe80::1", 10809, ""));
        assert_eq!("NBD://h//abs/path".parse::<NbdUri>().unwrap(), tcp("h", 10809, "/abs/path"));
        assert_eq!("nbd://h:/x".parse::<NbdUri>().unwrap(), tcp("h", 10809, "x"));
    }

    #[test]
    fn unix_forms() {
        let uri: NbdUri = "nbd+unix:///vm%2D1?socket=/run/nbd%20s.sock".parse().unwrap();
        assert_eq!(uri.address, Address::Unix("/run/nbd s.sock".into()));
        assert_eq!(uri.export, "vm-1");
        let uri: NbdUri = "nbd+unix://?socket=s.sock".parse().unwrap();
        assert_eq!(uri.address, Address::Unix("s.sock".into()));
        assert_eq!(uri.export, "");
    }

    #[test]
    fn display_round_trips() {
        for text in [
            "nbd://h/",
            "nbd://h:7000/disk%201",
            "nbd://[::1]:7000/x",
            "nbd+unix:///e?socket=/tmp/a%20b",
            "nbd+unix:///?socket=rel.sock",
        ] {
            let uri: NbdUri = text.parse().unwrap();
            assert_eq!(uri.to_string(), text);
            assert_eq!(uri.to_string().parse::<NbdUri>().unwrap(), uri);
        }
    }

    #[test]
    fn bad_uris_say_what_is_wrong() {
        for (text, needle) in [
            ("/tmp/disk.img", "expected nbd://"),
            ("http://h/", "unknown scheme"),
            ("nbds://h/", "TLS"),
            ("nbd+vsock://1:2/", "vsock"),
            ("nbd://", "missing host"),
            ("nbd://:10809/", "missing host"),
            ("nbd://h:0/", "bad port"),
            ("nbd://h:65536/", "bad port"),
            ("nbd://h:http/", "bad port"),
            ("nbd://::1/", "brackets"),
            ("nbd://[::1/", "unclosed"),
            ("nbd://[::1]x/", "after the IPv6 host"),
            ("nbd://user@h/", "user names"),
            ("nbd://h/a%2", "truncated escape"),
            ("nbd://h/a%zz", "bad escape"),
            ("nbd://h/%ff", "UTF-8"),
            ("nbd://h/?socket=/s", "only valid with nbd+unix"),
            ("nbd://h/?tls-verify-peer=false", "unsupported query parameter"),
            ("nbd+unix:///x", "needs ?socket="),
            ("nbd+unix:///x?socket=", "needs ?socket="),
            ("nbd+unix://host/x?socket=/s", "take no host"),
            ("nbd://h/x#frag", "fragments"),
        ] {
            let err = text.parse::<NbdUri>().expect_err(text).to_string();
            assert!(err.contains(needle), "{text}: {err}");
            assert!(err.contains(text), "{text}: error does not quote the URI: {err}");
        }
    }
}
