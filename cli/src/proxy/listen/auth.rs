//! Who may call `lro proxy --listen`, and from where: the `--tokens` file, the bearer check of
//! every request, the refusal to serve the network without tokens, and the DNS-rebinding check
//! of a loopback listener (docs/PROXY.md, "Serving remote clients").

use std::net::{IpAddr, SocketAddr};

use anyhow::{Context, bail};
use hyper::http::HeaderMap;
use hyper::http::header::{AUTHORIZATION, HOST, ORIGIN};

/// The principal of every request when the proxy runs without `--tokens` (loopback only).
pub const LOCAL: &str = "local";
/// The shortest token accepted: 32 characters, at least 128 bits when they are random hex.
const MIN_TOKEN: usize = 32;

/// The principals of `--tokens`, each with its token.
pub struct Tokens(Vec<(String, Vec<u8>)>);

impl Tokens {
    /// Reads a tokens file: lines `NAME TOKEN`; blank lines and lines starting with `#` are
    /// skipped. An error names the file and the line.
    pub fn read(path: &std::path::Path) -> anyhow::Result<Tokens> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("--tokens {}: cannot read it", path.display()))?;
        Tokens::parse(&text).with_context(|| format!("--tokens {}", path.display()))
    }

    /// Parses the text of a tokens file.
    pub fn parse(text: &str) -> anyhow::Result<Tokens> {
        let mut tokens: Vec<(String, Vec<u8>)> = Vec::new();
        for (number, line) in text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut words = line.split_whitespace();
            let (Some(name), Some(token), None) = (words.next(), words.next(), words.next()) else {
                bail!("line {number}: expected `NAME TOKEN`, two words");
            };
            if !valid_name(name) {
                bail!(
                    "line {number}: the name {name:?} must be 1 to 64 letters, digits, `.`, `_` or `-`, not starting with `.`"
                );
            }
            if token.len() < MIN_TOKEN {
                bail!(
                    "line {number}: {name}'s token has {} characters; give at least {MIN_TOKEN} (`openssl rand -hex 32` makes one)",
                    token.len()
                );
            }
            // Names are directory names, which some file systems (macOS's) compare ignoring case.
            if tokens.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
                bail!("line {number}: the name {name} is given twice (names are compared ignoring case)");
            }
            if tokens.iter().any(|(_, t)| t == token.as_bytes()) {
                bail!("line {number}: {name}'s token is another name's too; each principal needs its own");
            }
            tokens.push((name.to_owned(), token.as_bytes().to_vec()));
        }
        if tokens.is_empty() {
            bail!("no `NAME TOKEN` line: nobody could call the proxy");
        }
        Ok(Tokens(tokens))
    }

    /// How many principals there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are none (never, for tokens read from a file).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The principal a request's `Authorization: Bearer` token names. Every token is compared
    /// in full whatever matched, so the time taken does not tell how much of a guess was right.
    pub fn principal(&self, headers: &HeaderMap) -> Option<&str> {
        let given = bearer(headers)?;
        let mut found = None;
        for (name, token) in &self.0 {
            if same(given, token) {
                found = Some(name.as_str());
            }
        }
        found
    }
}

/// A principal's name: also the name of its directory under the offload directory.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The token of an `Authorization: Bearer TOKEN` header.
fn bearer(headers: &HeaderMap) -> Option<&[u8]> {
    let value = headers.get(AUTHORIZATION)?.as_bytes();
    let scheme = value.get(..7)?;
    scheme.eq_ignore_ascii_case(b"bearer ").then(|| value[7..].trim_ascii())
}

/// Equal bytes, compared in time that depends on neither their contents nor which is longer
/// (every byte of the longer one is read).
fn same(a: &[u8], b: &[u8]) -> bool {
    let mut differ = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        differ |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0);
    }
    differ == 0
}

/// Where to listen: `HOST:PORT` with an IP address or `localhost` as the host.
pub fn listen_address(text: &str) -> anyhow::Result<SocketAddr> {
    if let Ok(address) = text.parse::<SocketAddr>() {
        return Ok(address);
    }
    match text.rsplit_once(':') {
        Some(("localhost", port)) => {
            let port: u16 = port
                .parse()
                .with_context(|| format!("--listen {text:?}: {port:?} is not a port number"))?;
            Ok(SocketAddr::from(([127, 0, 0, 1], port)))
        }
        _ => bail!(
            "--listen {text:?}: expected HOST:PORT with an IP address or localhost as HOST (127.0.0.1:8080, [::1]:8080, 0.0.0.0:8080)"
        ),
    }
}

/// Refuses to serve the network without tokens.
pub fn check_exposure(address: SocketAddr, tokens: bool, text: &str) -> anyhow::Result<()> {
    if !tokens && !address.ip().is_loopback() {
        bail!(
            "--listen {text} serves the network without --tokens: anyone who can reach the port could call your server's tools and read every offload; give --tokens FILE, or listen on 127.0.0.1"
        );
    }
    Ok(())
}

/// For a loopback listener: whether the request's `Host`, and its `Origin` when it has one,
/// are loopback too. A web page on another site that a DNS name rebound to 127.0.0.1 sends its
/// own name in both, and is refused.
pub fn local_request(headers: &HeaderMap) -> Result<(), String> {
    let host = headers.get(HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    if !loopback_authority(host) {
        return Err(format!(
            "Host {host:?} is not a loopback address: refused (DNS rebinding)"
        ));
    }
    if let Some(origin) = headers.get(ORIGIN) {
        let text = origin.to_str().unwrap_or_default();
        let authority = text
            .strip_prefix("http://")
            .or_else(|| text.strip_prefix("https://"))
            .unwrap_or("");
        if !loopback_authority(authority) {
            return Err(format!(
                "Origin {text:?} is not a loopback origin: refused (DNS rebinding)"
            ));
        }
    }
    Ok(())
}

/// `localhost`, a loopback IP address, or either with a port.
fn loopback_authority(authority: &str) -> bool {
    let host = match authority.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((inside, port)) if port.is_empty() || port.strip_prefix(':').is_some_and(is_port) => inside,
            _ => return false,
        },
        None => match authority.rsplit_once(':') {
            Some((host, port)) if is_port(port) => host,
            Some(_) => return false,
            None => authority,
        },
    };
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn is_port(text: &str) -> bool {
    !text.is_empty() && text.parse::<u16>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::http::HeaderValue;

    const A: &str = "0123456789abcdef0123456789abcdef";
    const B: &str = "fedcba9876543210fedcba9876543210";

    fn headers(pairs: &[(hyper::http::header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn a_token_names_its_principal_and_nothing_else_does() {
        let tokens = Tokens::parse(&format!("# team\nalice {A}\n\nbob {B}\n")).unwrap();
        let ask = |value: &str| tokens.principal(&headers(&[(AUTHORIZATION, value)])).map(str::to_owned);
        assert_eq!(ask(&format!("Bearer {A}")).as_deref(), Some("alice"));
        assert_eq!(ask(&format!("bearer {B}")).as_deref(), Some("bob"));
        assert_eq!(ask(&format!("Bearer {}", &A[..31])), None);
        assert_eq!(ask(&format!("Bearer {A}0")), None);
        assert_eq!(ask(&format!("Basic {A}")), None);
        assert_eq!(tokens.principal(&HeaderMap::new()), None);
    }

    #[test]
    fn a_bad_tokens_file_is_refused_naming_the_line() {
        for (text, wanted) in [
            (format!("alice {A}\nbob\n"), "line 2: expected `NAME TOKEN`"),
            (format!("../x {A}\n"), "line 1: the name \"../x\""),
            (format!(".. {A}\n"), "line 1: the name \"..\""),
            ("alice short\n".to_owned(), "line 1: alice's token has 5 characters"),
            (
                format!("alice {A}\nalice {B}\n"),
                "line 2: the name alice is given twice",
            ),
            (
                format!("alice {A}\nAlice {B}\n"),
                "line 2: the name Alice is given twice",
            ),
            (
                format!("alice {A}\nbob {A}\n"),
                "line 2: bob's token is another name's too",
            ),
            ("# nobody\n".to_owned(), "no `NAME TOKEN` line"),
        ] {
            let error = Tokens::parse(&text).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(error.contains(wanted), "{text:?}: {error}");
        }
    }

    #[test]
    fn only_loopback_hosts_and_origins_reach_a_loopback_listener() {
        for host in ["localhost:8080", "127.0.0.1:3000", "[::1]:80", "localhost", "127.1.2.3"] {
            assert!(local_request(&headers(&[(HOST, host)])).is_ok(), "{host}");
        }
        for host in [
            "evil.example:8080",
            "localhost.evil.example",
            "127.0.0.1.evil:80",
            "[::1]x",
            "",
        ] {
            assert!(local_request(&headers(&[(HOST, host)])).is_err(), "{host}");
        }
        let with_origin = |origin| headers(&[(HOST, "localhost:8080"), (ORIGIN, origin)]);
        assert!(local_request(&with_origin("http://localhost:5173")).is_ok());
        assert!(local_request(&with_origin("http://evil.example")).is_err());
        assert!(local_request(&with_origin("null")).is_err());
    }

    #[test]
    fn the_network_is_served_only_with_tokens() {
        let any = listen_address("0.0.0.0:8080").unwrap();
        let error = check_exposure(any, false, "0.0.0.0:8080").unwrap_err().to_string();
        assert!(error.contains("serves the network without --tokens"), "{error}");
        assert!(check_exposure(any, true, "0.0.0.0:8080").is_ok());
        assert!(check_exposure(listen_address("localhost:0").unwrap(), false, "localhost:0").is_ok());
        assert!(check_exposure(listen_address("[::1]:1").unwrap(), false, "[::1]:1").is_ok());
        assert!(listen_address("example.com:80").is_err());
        assert!(listen_address("localhost:http").is_err());
    }
}
