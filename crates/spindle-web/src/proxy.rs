//! A reverse proxy that names the user (`--trust-proxy-user HEADER --trusted-proxy CIDR`), for a
//! sign-in done in front of Spindle (oauth2-proxy, for one).
//!
//! The header is believed only on connections from a trusted network: anyone else could send
//! it too. From anywhere else the header is ignored and the request must carry a token, like any
//! other. From the proxy, a request without the header is refused: a proxy that forgot to sign
//! someone in must not fall back to the proxy's own address being trusted.

use std::net::IpAddr;

use axum::http::{HeaderMap, HeaderName};
use ipnet::IpNet;

/// Which peers may name the user, and in which header.
#[derive(Debug, Clone)]
pub struct TrustedProxy {
    header: HeaderName,
    networks: Vec<IpNet>,
}

/// What a request says about its user through the proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProxyUser {
    /// Not from a trusted proxy: the header, if any, is ignored.
    NotFromProxy,
    /// From the proxy, naming this user.
    Named(String),
    /// From the proxy, without a usable name.
    Unnamed,
}

impl TrustedProxy {
    /// Checks `--trust-proxy-user` and each `--trusted-proxy` (an address or a CIDR).
    pub fn new(header: &str, networks: &[String]) -> Result<TrustedProxy, String> {
        let header = HeaderName::try_from(header.trim())
            .map_err(|_| format!("--trust-proxy-user {header:?} is not a header name"))?;
        if header == axum::http::header::AUTHORIZATION || header == axum::http::header::COOKIE {
            return Err(format!(
                "--trust-proxy-user {header} would read the user's own credentials; name the header the proxy sets (e.g. X-Forwarded-User)"
            ));
        }
        if networks.is_empty() {
            return Err(
                "--trust-proxy-user needs --trusted-proxy CIDR (the proxy's address)".into(),
            );
        }
        let networks = networks
            .iter()
            .map(|text| {
                let text = text.trim();
                text.parse::<IpNet>()
                    .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| format!("--trusted-proxy {text:?} is not an address or a CIDR"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TrustedProxy { header, networks })
    }

    /// The header the proxy sets.
    pub fn header(&self) -> &HeaderName {
        &self.header
    }

    /// What the request from `peer` with `headers` says about its user.
    pub fn user(&self, peer: IpAddr, headers: &HeaderMap) -> ProxyUser {
        let peer = match peer {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(peer, IpAddr::V4),
            v4 => v4,
        };
        if !self.networks.iter().any(|net| net.contains(&peer)) {
            return ProxyUser::NotFromProxy;
        }
        let mut values = headers.get_all(&self.header).iter();
        match (values.next(), values.next()) {
            (Some(value), None) => match value.to_str().map(str::trim) {
                Ok(name) if !name.is_empty() => ProxyUser::Named(name.to_string()),
                _ => ProxyUser::Unnamed,
            },
            // None, or more than one (which of them would the proxy have meant?).
            _ => ProxyUser::Unnamed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn proxy() -> TrustedProxy {
        TrustedProxy::new("X-Forwarded-User", &["10.1.0.0/16".into(), "::1".into()]).unwrap()
    }

    fn with(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append("x-forwarded-user", HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn only_the_trusted_networks_may_name_the_user() {
        let proxy = proxy();
        let cases: &[(&str, &[&str], ProxyUser)] = &[
            ("10.1.2.3", &["alice"], ProxyUser::Named("alice".into())),
            ("10.1.2.3", &[" alice "], ProxyUser::Named("alice".into())),
            (
                "::ffff:10.1.2.3",
                &["alice"],
                ProxyUser::Named("alice".into()),
            ),
            ("::1", &["bob"], ProxyUser::Named("bob".into())),
            ("10.2.0.1", &["alice"], ProxyUser::NotFromProxy),
            ("127.0.0.1", &["alice"], ProxyUser::NotFromProxy),
            ("10.1.2.3", &[], ProxyUser::Unnamed),
            ("10.1.2.3", &[""], ProxyUser::Unnamed),
            ("10.1.2.3", &["alice", "bob"], ProxyUser::Unnamed),
        ];
        for (peer, values, expected) in cases {
            assert_eq!(
                &proxy.user(peer.parse().unwrap(), &with(values)),
                expected,
                "{peer} {values:?}"
            );
        }
    }

    #[test]
    fn bad_settings_are_refused_with_the_flag_named() {
        let cases: &[(&str, &[&str], &str)] = &[
            ("X-Forwarded-User", &[], "needs --trusted-proxy"),
            (
                "X-Forwarded-User",
                &["10.0.0.0/33"],
                "not an address or a CIDR",
            ),
            (
                "X-Forwarded-User",
                &["proxy.local"],
                "not an address or a CIDR",
            ),
            ("bad header", &["10.0.0.1"], "not a header name"),
            ("Authorization", &["10.0.0.1"], "own credentials"),
        ];
        for (header, networks, expected) in cases {
            let networks: Vec<String> = networks.iter().map(|s| s.to_string()).collect();
            let error = TrustedProxy::new(header, &networks).unwrap_err();
            assert!(error.contains(expected), "{header} {networks:?}: {error}");
        }
    }
}
