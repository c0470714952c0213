//! Session identity. (Logs and resume live here as they land.)

/// A new session id: a UUIDv7, so ids sort by creation time.
pub fn new_session_id() -> String {
    uuid::Uuid::now_v7().to_string()
}
