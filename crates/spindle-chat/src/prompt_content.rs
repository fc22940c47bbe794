//! A prompt's content blocks: the typed text, the files it mentions
//! (`@path`, resolved by the host like a read: under the working directory
//! only) and `--attach` images, checked against what the agent accepts.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::Value;
use spindle_host::Host;
use spindle_protocol::PromptCapabilities;
use spindle_protocol::prompt::image_mime_type;

/// An image read from disk, ready to send.
#[derive(Debug, Clone)]
pub(crate) struct Attachment {
    /// `image/png`, ...
    pub mime: &'static str,
    /// Base64 of the bytes.
    pub data: String,
}

/// The largest image `--attach` sends.
const ATTACH_LIMIT: u64 = 16 * 1024 * 1024;

/// Reads the `--attach` files; refused with a message when the agent takes
/// no images, a file is missing, too big or not an image.
pub(crate) fn load_attachments(
    paths: &[PathBuf],
    caps: PromptCapabilities,
) -> Result<Vec<Attachment>, String> {
    if !paths.is_empty() && !caps.image {
        return Err(format!(
            "--attach {}: the agent does not accept images (it does not advertise the image prompt capability)",
            paths[0].display()
        ));
    }
    paths.iter().map(|p| load_one(p)).collect()
}

fn load_one(path: &Path) -> Result<Attachment, String> {
    let shown = path.display();
    let mime = image_mime_type(path).ok_or_else(|| {
        format!("--attach {shown}: not an image this client sends (png, jpeg, gif, webp, svg by extension)")
    })?;
    let meta = std::fs::metadata(path).map_err(|e| format!("--attach {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("--attach {shown}: not a file"));
    }
    if meta.len() > ATTACH_LIMIT {
        return Err(format!(
            "--attach {shown}: {} bytes, more than the {} MiB limit",
            meta.len(),
            ATTACH_LIMIT >> 20
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("--attach {shown}: {e}"))?;
    Ok(Attachment {
        mime,
        data: BASE64.encode(&bytes),
    })
}

/// The content blocks for `text` with its mentions and `attachments`; an
/// error says what was refused and why.
pub(crate) fn build(
    text: &str,
    attachments: &[Attachment],
    host: &Host,
    caps: PromptCapabilities,
) -> Result<Value, String> {
    host.prompt_content(
        text,
        attachments.iter().map(|a| (a.mime, a.data.as_str())),
        caps,
    )
}
