//! The editor's own file access (`fs/read_text_file`, `fs/write_text_file`)
//! for the file tools of a session whose editor offers it: reads see unsaved
//! buffers, writes land in them. cadre's policy has decided each path first.

use std::path::Path;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{ReadTextFileRequest, WriteTextFileRequest};
use cadre_core::tools::EditorFiles;
use futures::future::BoxFuture;

/// One session's file access through its editor.
pub struct ClientFiles {
    /// The connection to the editor.
    pub cx: ConnectionTo<Client>,
    /// The session the requests are made for.
    pub session_id: String,
    /// The editor reads files (else cadre reads the disk).
    pub reads: bool,
    /// The editor writes files (else cadre writes the disk).
    pub writes: bool,
}

impl EditorFiles for ClientFiles {
    fn reads(&self) -> bool {
        self.reads
    }

    fn writes(&self) -> bool {
        self.writes
    }

    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            self.cx
                .send_request(ReadTextFileRequest::new(self.session_id.clone(), path))
                .block_task()
                .await
                .map(|r| r.content)
                .map_err(|e| format!("the editor could not read {}: {e}", path.display()))
        })
    }

    fn write_text<'a>(
        &'a self,
        path: &'a Path,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            self.cx
                .send_request(WriteTextFileRequest::new(
                    self.session_id.clone(),
                    path,
                    text.to_string(),
                ))
                .block_task()
                .await
                .map(|_| ())
                .map_err(|e| format!("the editor could not write {}: {e}", path.display()))
        })
    }
}
