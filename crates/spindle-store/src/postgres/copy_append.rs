//! A large batch of log lines appended with `COPY ... FROM STDIN (FORMAT binary)`: PostgreSQL
//! reads the rows as they come, without planning an insert from arrays or checking each row
//! against a conflict clause, which is most of its work for a fast stream's group commits.
//!
//! COPY has no `ON CONFLICT`: a batch that meets a `seq` the log holds already (a retry of a
//! commit whose answer was lost) fails with a unique violation; the transaction is rolled back and
//! the caller appends the batch the ordinary way, which checks the lines already there
//! (`Store::append_lines`' contract: a retry is committed once; a different line fails).

use deadpool_postgres::Object;
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;

use super::convert::pg;
use crate::listen;
use crate::types::StoreError;

/// Batches of at least this many lines go through COPY; smaller ones through the insert (one
/// round trip fewer).
pub(super) const COPY_MIN_LINES: usize = 256;

/// The session's `updated_at` and the listeners' notice, after the rows (same transaction).
const TOUCH: &str = "
WITH touched AS (
    UPDATE sessions SET updated_at = $2 WHERE id = $1 RETURNING id
), notified AS (
    SELECT pg_notify($3, $4)
)
SELECT (SELECT COUNT(*) FROM touched), (SELECT COUNT(*) FROM notified)";

/// What a COPY attempt did.
pub(super) enum Copied {
    /// The batch is committed.
    Committed,
    /// Some `seq` was taken: nothing was written, the caller appends the ordinary way.
    SeqTaken,
}

/// Appends the rows in one transaction (BEGIN, COPY, the session's touch and notice, COMMIT).
#[allow(clippy::too_many_arguments)]
pub(super) async fn append(
    client: &Object,
    session: i64,
    seqs: &[i64],
    directions: &[&'static str],
    texts: &[Vec<u8>],
    at: i64,
    notice: &str,
) -> Result<Copied, StoreError> {
    let write = pg(StoreError::Write);
    let (begun, sink) = tokio::join!(
        biased;
        client.batch_execute("BEGIN"),
        client.copy_in(
            "COPY wire_log(session_id, seq, direction, line, at) FROM STDIN (FORMAT binary)"
        ),
    );
    let outcome = async {
        begun?;
        let sink = sink?;
        let mut writer = std::pin::pin!(BinaryCopyInWriter::new(
            sink,
            &[Type::INT8, Type::INT8, Type::TEXT, Type::BYTEA, Type::INT8],
        ));
        for ((seq, direction), text) in seqs.iter().zip(directions).zip(texts) {
            let row: [&(dyn tokio_postgres::types::ToSql + Sync); 5] =
                [&session, seq, direction, &text.as_slice(), &at];
            writer.as_mut().write(&row).await?;
        }
        writer.finish().await?;
        let row = client
            .query_one(TOUCH, &[&session, &at, &listen::CHANNEL, &notice])
            .await?;
        Ok::<i64, tokio_postgres::Error>(row.get(0))
    }
    .await;
    match outcome {
        Ok(touched) if touched > 0 => {
            client.batch_execute("COMMIT").await.map_err(&write)?;
            Ok(Copied::Committed)
        }
        Ok(_) => {
            let _ = client.batch_execute("ROLLBACK").await;
            Err(StoreError::Write(format!("no session {session}")))
        }
        Err(error) => {
            let _ = client.batch_execute("ROLLBACK").await;
            if error.code() == Some(&SqlState::UNIQUE_VIOLATION) {
                Ok(Copied::SeqTaken)
            } else {
                Err(write(error))
            }
        }
    }
}
