//! Who is who on a shared server: the users file of `spindle serve --users FILE`, the roles, and
//! the token check.
//!
//! The file is JSON: `{"users": [{"name": "alice", "role": "admin", "token": "..."}]}`. A user's
//! token may be given as `"tokenSha256"` (64 hex digits) instead, so the file need hold no
//! secret. A user with neither can only be named by a trusted reverse proxy
//! (`--trust-proxy-user`).
//!
//! Invariants:
//! - Tokens are kept only as SHA-256 digests; nothing here can print or return a token.
//! - [`Users::authenticate`] compares the candidate's digest with every user's, without an early
//!   exit, so the time taken does not say which user (if any) nearly matched.
//! - Names and tokens are unique: two users sharing a token could not be told apart.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use sha2::{Digest, Sha256};

/// What a user may do. Ordered: each role may do everything the ones before it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads sessions, transcripts and event streams; attaches to `/acp` as an observer.
    Observer,
    /// Also creates sessions, prompts, cancels, answers questions, reviews writes, restores.
    Controller,
    /// Also sees and manages every user's sessions, and the agents.
    Admin,
}

impl Role {
    /// The name used in the users file and in answers.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Observer => "observer",
            Role::Controller => "controller",
            Role::Admin => "admin",
        }
    }

    /// Whether this role may do what `needed` names.
    pub fn allows(self, needed: Role) -> bool {
        self >= needed
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One user: a name and a role (never the token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// The name shown as the author of what the user does.
    pub name: String,
    /// What the user may do.
    pub role: Role,
}

/// Why a users file was refused. Names the user (by position and name), never a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsersError(pub String);

impl fmt::Display for UsersError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsersError {}

/// Shortest token accepted in clear: a guessable token is refused rather than rate-limited.
pub const MIN_TOKEN_CHARS: usize = 16;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UsersFile {
    users: Vec<UserEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct UserEntry {
    name: String,
    role: Role,
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    token_sha256: Option<String>,
}

#[derive(Clone)]
struct Known {
    user: Arc<User>,
    digest: Option<[u8; 32]>,
}

/// The users of one server.
#[derive(Clone)]
pub struct Users {
    known: Vec<Known>,
}

impl fmt::Debug for Users {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Digests are left out too: they are what an attacker would brute-force offline.
        f.debug_list()
            .entries(self.known.iter().map(|k| (&k.user.name, k.user.role)))
            .finish()
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Users {
    /// The single admin of `--token`.
    pub fn single_admin(token: &str) -> Users {
        Users {
            known: vec![Known {
                user: Arc::new(User {
                    name: "admin".into(),
                    role: Role::Admin,
                }),
                digest: Some(digest(token)),
            }],
        }
    }

    /// Reads and checks a users file.
    pub fn load(path: &Path) -> Result<Users, UsersError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| UsersError(format!("cannot read users file {}: {e}", path.display())))?;
        Users::parse(&text)
            .map_err(|e| UsersError(format!("users file {}: {}", path.display(), e.0)))
    }

    /// Checks the text of a users file.
    pub fn parse(text: &str) -> Result<Users, UsersError> {
        // serde's message may quote the offending value; for a token that would print it, so
        // only the position is kept for errors inside an entry.
        let file: UsersFile = serde_json::from_str(text).map_err(|e| {
            UsersError(format!(
                "not a users file (line {}, column {}): expected {{\"users\": [{{\"name\", \"role\", \"token\" or \"tokenSha256\"}}]}} with roles admin, controller or observer",
                e.line(),
                e.column()
            ))
        })?;
        let mut known: Vec<Known> = Vec::with_capacity(file.users.len());
        for (index, entry) in file.users.into_iter().enumerate() {
            let at = format!("user {} ({:?})", index + 1, entry.name);
            let name = entry.name.trim();
            if name.is_empty() || name.chars().any(char::is_control) || name.len() > 64 {
                return Err(UsersError(format!(
                    "user {}: a name is 1 to 64 printable characters",
                    index + 1
                )));
            }
            if known.iter().any(|k| k.user.name == name) {
                return Err(UsersError(format!("{at}: the name is given twice")));
            }
            let digest = match (entry.token, entry.token_sha256) {
                (Some(_), Some(_)) => {
                    return Err(UsersError(format!(
                        "{at}: give \"token\" or \"tokenSha256\", not both"
                    )));
                }
                (Some(token), None) => {
                    if token.chars().count() < MIN_TOKEN_CHARS
                        || token.chars().any(|c| c.is_whitespace() || c.is_control())
                    {
                        return Err(UsersError(format!(
                            "{at}: a token is at least {MIN_TOKEN_CHARS} characters without spaces"
                        )));
                    }
                    Some(digest(&token))
                }
                (None, Some(hex_digest)) => {
                    let mut bytes = [0u8; 32];
                    hex::decode_to_slice(hex_digest.trim(), &mut bytes).map_err(|_| {
                        UsersError(format!(
                            "{at}: \"tokenSha256\" is 64 hex digits (`printf %s TOKEN | sha256sum`)"
                        ))
                    })?;
                    Some(bytes)
                }
                (None, None) => None,
            };
            if let Some(digest) = digest
                && known.iter().any(|k| k.digest == Some(digest))
            {
                return Err(UsersError(format!(
                    "{at}: the same token as another user (each user needs their own)"
                )));
            }
            known.push(Known {
                user: Arc::new(User {
                    name: name.to_string(),
                    role: entry.role,
                }),
                digest,
            });
        }
        if known.is_empty() {
            return Err(UsersError("the file names no user".into()));
        }
        Ok(Users { known })
    }

    /// The user whose token `candidate` is, if any. Every digest is compared, whatever matched.
    pub fn authenticate(&self, candidate: &str) -> Option<Arc<User>> {
        let presented = digest(candidate);
        let mut found = None;
        for known in &self.known {
            let Some(expected) = &known.digest else {
                continue;
            };
            let mut difference = 0u8;
            for (a, b) in expected.iter().zip(presented.iter()) {
                difference |= a ^ b;
            }
            if difference == 0 {
                found = Some(known.user.clone());
            }
        }
        found
    }

    /// The user a trusted proxy named, if the file lists them.
    pub fn by_name(&self, name: &str) -> Option<Arc<User>> {
        self.known
            .iter()
            .find(|k| k.user.name == name)
            .map(|k| k.user.clone())
    }

    /// Names of the users without a token (reachable only through a trusted proxy).
    pub fn tokenless(&self) -> Vec<&str> {
        self.known
            .iter()
            .filter(|k| k.digest.is_none())
            .map(|k| k.user.name.as_str())
            .collect()
    }

    /// Every user, in file order.
    pub fn list(&self) -> impl Iterator<Item = &User> {
        self.known.iter().map(|k| k.user.as_ref())
    }
}

#[cfg(test)]
mod tests;
