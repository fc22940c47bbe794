//! Who may talk to the server: Host and Origin checks against DNS rebinding and cross-site
//! requests, the access token, and the response headers every page gets.
//!
//! The rules, enforced for every route by `check_request`:
//! - `Host` must name one of the allowed authorities (loopback names with the bound port, the
//!   bound address, and any `--allow-host`). A DNS-rebinding page carries its own host name here.
//! - `Origin`, when present, must be `http://` plus an allowed authority; `null` is refused.
//!   `Sec-Fetch-Site: cross-site` is refused.
//! - State-changing requests (anything but GET/HEAD) must have `Content-Type: application/json`,
//!   which a cross-site form cannot send without a CORS preflight that this server never grants.
//! - With a token or users configured, every request needs a token ([`crate::access`] says whose
//!   it is): `Authorization: Bearer <token>` or the `spindle_token` cookie. `GET /?token=<token>`
//!   sets the cookie (HttpOnly, SameSite=Strict). The request then carries its
//!   [`crate::access::Principal`]; what each route lets a role do is [`crate::roles`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::access::{Access, Principal};

/// The access policy of one server.
#[derive(Debug, Clone)]
pub struct AccessPolicy {
    allowed_authorities: Vec<String>,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// HTTP status to answer with.
    pub status: StatusCode,
    /// Plain-text reason (never echoes request content).
    pub reason: &'static str,
}

/// The cookie that carries the token for the page and its EventSource.
pub const TOKEN_COOKIE: &str = "spindle_token";

/// The Content-Security-Policy of every response: only the server's own script and style files,
/// no inline script, no eval, no plugins, no framing, no off-site connections.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

impl AccessPolicy {
    /// The policy for a server bound to `bind`. Refuses a non-loopback bind unless requests need
    /// a token (`--token` or `--users`).
    pub fn new(
        bind: SocketAddr,
        token_required: bool,
        extra_hosts: &[String],
    ) -> Result<AccessPolicy, String> {
        if !bind.ip().is_loopback() && !token_required {
            return Err(format!(
                "refusing to listen on {bind} without --token or --users: only loopback binds may be open"
            ));
        }
        let port = bind.port();
        let mut allowed = vec![
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ];
        if !bind.ip().is_unspecified() {
            allowed.push(bind.to_string());
        }
        for host in extra_hosts {
            let host = host.trim().to_ascii_lowercase();
            if host.is_empty() {
                continue;
            }
            if host.contains(':') && !host.starts_with('[') {
                allowed.push(host);
            } else {
                allowed.push(format!("{host}:{port}"));
            }
        }
        allowed.sort();
        allowed.dedup();
        Ok(AccessPolicy {
            allowed_authorities: allowed,
        })
    }

    /// The authorities accepted in `Host`.
    pub fn allowed_authorities(&self) -> &[String] {
        &self.allowed_authorities
    }

    fn authority_allowed(&self, authority: &str) -> bool {
        let authority = authority.to_ascii_lowercase();
        self.allowed_authorities.contains(&authority)
    }

    /// Checks one request's Host, Origin and content type (the token is [`Access`]'s).
    pub fn check_request(&self, method: &Method, headers: &HeaderMap) -> Result<(), Refusal> {
        // RFC 9112 3.2: more than one Host is a bad request; only the first was checked (F4).
        // A second Origin would likewise let the first one vouch for the other.
        for (name, what) in [
            (header::HOST, "more than one Host header"),
            (header::ORIGIN, "more than one Origin header"),
        ] {
            if headers.get_all(name).iter().nth(1).is_some() {
                return Err(Refusal {
                    status: StatusCode::BAD_REQUEST,
                    reason: what,
                });
            }
        }
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .ok_or(Refusal {
                status: StatusCode::BAD_REQUEST,
                reason: "missing Host header",
            })?;
        if !self.authority_allowed(host) {
            return Err(Refusal {
                status: StatusCode::MISDIRECTED_REQUEST,
                reason: "Host not allowed (DNS rebinding protection); use the printed URL or --allow-host",
            });
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            let allowed = origin
                .strip_prefix("http://")
                .is_some_and(|authority| self.authority_allowed(authority));
            if !allowed {
                return Err(Refusal {
                    status: StatusCode::FORBIDDEN,
                    reason: "cross-origin request refused",
                });
            }
        }
        if headers
            .get("sec-fetch-site")
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"cross-site"))
        {
            return Err(Refusal {
                status: StatusCode::FORBIDDEN,
                reason: "cross-site request refused",
            });
        }
        // DELETE carries no body (`DELETE /acp` ends a connection); like any non-simple method
        // a browser sends it cross-origin only after a preflight, which nothing here answers.
        if method != Method::GET && method != Method::HEAD && method != Method::DELETE {
            let json = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| {
                    v.split(';')
                        .next()
                        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
                });
            if !json {
                return Err(Refusal {
                    status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    reason: "state-changing requests must be application/json",
                });
            }
        }
        Ok(())
    }
}

impl AccessPolicy {
    /// Checks the request target: an absolute-form target (`GET http://host/path`) names the
    /// authority the request is for, which takes precedence over `Host` (RFC 9112 3.2.2), so it
    /// must be `http://` plus an allowed authority as well (F4). Origin-form targets (`/path`)
    /// pass.
    pub fn check_target(&self, target: &Uri) -> Result<(), Refusal> {
        let Some(authority) = target.authority() else {
            return Ok(());
        };
        let http = target
            .scheme_str()
            .is_none_or(|s| s.eq_ignore_ascii_case("http"));
        if !http || !self.authority_allowed(authority.as_str()) {
            return Err(Refusal {
                status: StatusCode::MISDIRECTED_REQUEST,
                reason: "request target not allowed (DNS rebinding protection); use the printed URL",
            });
        }
        Ok(())
    }
}

fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
}

fn cookie_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == TOKEN_COOKIE).then_some(value)
        })
}

/// The token a request presents: `Authorization: Bearer`, the cookie, or `?token=` on `GET /`.
pub fn presented_token<'r>(
    headers: &'r HeaderMap,
    query_token: Option<&'r str>,
) -> Option<&'r str> {
    bearer_token(headers)
        .or_else(|| cookie_token(headers))
        .or(query_token)
}

/// What the access check of every request holds: the Host/Origin policy and who is who.
#[derive(Debug)]
pub(crate) struct Guard {
    pub(crate) policy: AccessPolicy,
    pub(crate) access: Arc<Access>,
}

/// The access check and the security headers, for every request including unknown paths.
pub(crate) async fn guard(
    State(guard): State<Arc<Guard>>,
    mut request: Request,
    next: Next,
) -> Response {
    let query_token = (request.uri().path() == "/")
        .then(|| query_param(request.uri().query(), "token"))
        .flatten();
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip());
    let checked = match guard.policy.check_target(request.uri()).and_then(|()| {
        guard
            .policy
            .check_request(request.method(), request.headers())
    }) {
        Err(refusal) => Err((refusal.status, refusal.reason).into_response()),
        Ok(()) => {
            let token = presented_token(request.headers(), query_token.as_deref());
            match guard
                .access
                .identify(peer, request.headers(), token, Instant::now())
            {
                Ok(user) => Ok(user),
                Err(denied) => {
                    let mut response = (denied.status, denied.reason).into_response();
                    if let Some(seconds) = denied.retry_after {
                        response
                            .headers_mut()
                            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
                    }
                    Err(response)
                }
            }
        }
    };
    let mut response = match checked {
        Err(response) => response,
        Ok(user) => match query_token {
            // Trade the token in the URL for a cookie and drop it from the address bar.
            Some(token) if guard.access.token_required() => Response::builder()
                .status(StatusCode::SEE_OTHER)
                .header(header::LOCATION, "/")
                .header(
                    header::SET_COOKIE,
                    format!("{TOKEN_COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"),
                )
                .body(axum::body::Body::empty())
                .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response()),
            _ => {
                request.extensions_mut().insert(Principal(user.clone()));
                // With users, what the request asks of a session is noted as theirs.
                let author = guard.access.authors().then(|| user.name.clone());
                let response =
                    spindle_runtime::acting_as(author.as_deref(), next.run(request)).await;
                end_streams_on_revocation(response, &guard.access, user)
            }
        },
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

/// An event stream held for a user ends when a reload removes the user or changes their role.
fn end_streams_on_revocation(
    response: Response,
    access: &Arc<Access>,
    user: Arc<crate::users::User>,
) -> Response {
    let streaming = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !streaming || !access.token_required() {
        return response;
    }
    use futures_util::StreamExt;
    let revoked = Box::pin(access.clone().revoked(user));
    let (parts, body) = response.into_parts();
    let body = axum::body::Body::from_stream(body.into_data_stream().take_until(revoked));
    Response::from_parts(parts, body)
}

fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        // Tokens are plain ASCII; a percent-encoded token simply does not match.
        (key == name).then(|| value.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn loopback() -> AccessPolicy {
        AccessPolicy::new("127.0.0.1:8080".parse().unwrap(), false, &[]).unwrap()
    }

    #[test]
    fn a_non_loopback_bind_needs_a_token() {
        let error = AccessPolicy::new("0.0.0.0:80".parse().unwrap(), false, &[]).unwrap_err();
        assert!(error.contains("--token or --users"));
        assert!(AccessPolicy::new("0.0.0.0:80".parse().unwrap(), true, &[]).is_ok());
        assert!(AccessPolicy::new("[::1]:80".parse().unwrap(), false, &[]).is_ok());
    }

    #[test]
    fn host_must_be_an_allowed_authority() {
        let policy = loopback();
        for host in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LOCALHOST:8080",
            "[::1]:8080",
        ] {
            assert!(
                policy
                    .check_request(&Method::GET, &headers(&[("host", host)]))
                    .is_ok(),
                "{host}"
            );
        }
        for host in [
            "evil.example:8080",
            "127.0.0.1:9999",
            "localhost",
            "127.0.0.1.evil:8080",
        ] {
            let refusal = policy
                .check_request(&Method::GET, &headers(&[("host", host)]))
                .unwrap_err();
            assert_eq!(refusal.status, StatusCode::MISDIRECTED_REQUEST, "{host}");
        }
        assert!(
            policy
                .check_request(&Method::GET, &HeaderMap::new())
                .is_err()
        );
    }

    #[test]
    fn a_second_host_or_origin_and_foreign_absolute_targets_are_refused() {
        let policy = loopback();
        let check =
            |pairs: &[(&'static str, &str)]| policy.check_request(&Method::GET, &headers(pairs));
        for pairs in [
            &[("host", "127.0.0.1:8080"), ("host", "attacker.example")][..],
            &[("host", "127.0.0.1:8080"), ("host", "127.0.0.1:8080")][..],
            &[
                ("host", "127.0.0.1:8080"),
                ("origin", "http://127.0.0.1:8080"),
                ("origin", "http://attacker.example"),
            ][..],
        ] {
            assert_eq!(
                check(pairs).unwrap_err().status,
                StatusCode::BAD_REQUEST,
                "{pairs:?}"
            );
        }
        let target = |t: &str| policy.check_target(&t.parse::<Uri>().unwrap());
        assert!(target("/api/sessions").is_ok());
        assert!(target("http://127.0.0.1:8080/api/sessions").is_ok());
        assert!(target("http://LOCALHOST:8080/").is_ok());
        for bad in [
            "http://attacker.example/",
            "http://attacker.example:8080/",
            "https://127.0.0.1:8080/",
            "http://127.0.0.1:8080@attacker.example/",
            "http://127.0.0.1/",
        ] {
            assert_eq!(
                target(bad).unwrap_err().status,
                StatusCode::MISDIRECTED_REQUEST,
                "{bad}"
            );
        }
    }

    #[test]
    fn extra_hosts_are_allowed_with_the_bound_port() {
        let policy = AccessPolicy::new(
            "0.0.0.0:7000".parse().unwrap(),
            true,
            &["box.lan".into(), "proxy:443".into()],
        )
        .unwrap();
        let ok = |host: &str| {
            policy
                .check_request(
                    &Method::GET,
                    &headers(&[("host", host), ("authorization", "Bearer t")]),
                )
                .is_ok()
        };
        assert!(ok("box.lan:7000"));
        assert!(ok("proxy:443"));
        assert!(!ok("0.0.0.0:7000"));
        assert!(!ok("other:7000"));
    }

    #[test]
    fn foreign_or_null_origins_and_cross_site_fetches_are_refused() {
        let policy = loopback();
        let check = |pairs: &[(&'static str, &str)]| {
            let mut all = vec![("host", "127.0.0.1:8080")];
            all.extend_from_slice(pairs);
            policy.check_request(&Method::GET, &headers(&all))
        };
        assert!(check(&[("origin", "http://127.0.0.1:8080")]).is_ok());
        assert!(check(&[("origin", "http://localhost:8080")]).is_ok());
        assert!(check(&[("sec-fetch-site", "same-origin")]).is_ok());
        for origin in [
            "http://evil.example",
            "null",
            "https://127.0.0.1:8080",
            "http://127.0.0.1:8081",
        ] {
            assert_eq!(
                check(&[("origin", origin)]).unwrap_err().status,
                StatusCode::FORBIDDEN,
                "{origin}"
            );
        }
        assert!(check(&[("sec-fetch-site", "cross-site")]).is_err());
    }

    #[test]
    fn posts_must_be_json() {
        let policy = loopback();
        let post = |content_type: Option<&str>| {
            let mut pairs = vec![("host", "127.0.0.1:8080")];
            if let Some(ct) = content_type {
                pairs.push(("content-type", ct));
            }
            policy.check_request(&Method::POST, &headers(&pairs))
        };
        assert!(post(Some("application/json")).is_ok());
        assert!(post(Some("application/json; charset=utf-8")).is_ok());
        for ct in [
            None,
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
        ] {
            assert_eq!(
                post(ct).unwrap_err().status,
                StatusCode::UNSUPPORTED_MEDIA_TYPE
            );
        }
    }

    #[test]
    fn the_token_is_taken_from_header_cookie_or_bootstrap_query_in_that_order() {
        type Case<'a> = (
            &'a [(&'static str, &'a str)],
            Option<&'a str>,
            Option<&'a str>,
        );
        let cases: &[Case] = &[
            (&[], None, None),
            (&[("authorization", "Bearer s3cret")], None, Some("s3cret")),
            (&[("authorization", "Basic s3cret")], None, None),
            (
                &[("cookie", "a=b; spindle_token=s3cret")],
                None,
                Some("s3cret"),
            ),
            (&[("cookie", "spindle_token_x=s3cret")], None, None),
            (&[], Some("q"), Some("q")),
            (
                &[("authorization", "Bearer h"), ("cookie", "spindle_token=c")],
                Some("q"),
                Some("h"),
            ),
            (&[("cookie", "spindle_token=c")], Some("q"), Some("c")),
        ];
        for (pairs, query, expected) in cases {
            let map = headers(pairs);
            assert_eq!(
                presented_token(&map, *query),
                *expected,
                "{pairs:?} {query:?}"
            );
        }
    }
}
