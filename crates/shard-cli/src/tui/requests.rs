//! The client's side of server requests: the dialog of the oldest pending one, notices
//! shown and dismissed, answers sent (and remembered, so a resolution this client caused
//! needs no note), and a line naming who answered one elsewhere.

use shard_client::view::Pending;
use shard_protocol::command::UiResponse;
use shard_protocol::types::UiKind;
use shard_protocol::{Command, Event};

use super::app::{Action, App};
use super::dialogs::{self, Dialog};
use super::slash;

impl App {
    /// A request left the view: unless this client answered it, says who did and how.
    /// `shown` is the request as it was shown, read before the view dropped it.
    pub(super) fn resolved(&mut self, request_id: &str, shown: Option<&Pending>, ev: &Event) {
        if self.answered_here.remove(request_id) {
            return;
        }
        if let Some(p) = shown {
            let text =
                shard_client::sanitize::strip(&shard_client::results::answered_elsewhere(p, ev));
            let style = self.theme.dim();
            self.note_text(text, style);
        }
    }

    /// Opens the dialog of the oldest pending request, closes one that was answered
    /// elsewhere, and dismisses notices (shown as notes, they need no answer).
    pub fn sync_dialog(&mut self) {
        if let Some(Dialog::Permission { request, .. }) = &self.dialog
            && self.view.pending_request(&request.request_id).is_none()
        {
            self.dialog = None;
        }
        if let Some(Dialog::Ui { request, .. }) = &self.dialog
            && self.view.pending_request(&request.request_id).is_none()
        {
            self.dialog = None;
        }
        if self.dialog.is_some() {
            return;
        }
        let notices: Vec<_> = self
            .view
            .pending
            .iter()
            .filter_map(|p| match p {
                Pending::Ui(u) if u.kind == UiKind::Notify => Some(u.clone()),
                _ => None,
            })
            .collect();
        for u in notices {
            let text = format!(
                "notice: {} {}",
                u.title
                    .as_deref()
                    .map(shard_client::sanitize::strip)
                    .unwrap_or_default(),
                u.message
                    .as_deref()
                    .map(shard_client::sanitize::strip)
                    .unwrap_or_default()
            );
            let style = self.theme.accent();
            self.note_text(text.trim_end().to_string(), style);
            if !self.observer {
                let agent_id = self.agent_id();
                self.send_plain(Command::UiResponse(UiResponse {
                    agent_id,
                    request_id: u.request_id.clone(),
                    value: None,
                }));
            }
            self.view.pending.retain(|p| p.request_id() != u.request_id);
        }
        if let Some(p) = self.view.pending.first() {
            self.dialog = Some(dialogs::open(p));
        }
    }

    pub(super) fn dialog_outcome(&mut self, outcome: dialogs::Outcome) -> Vec<Action> {
        match outcome {
            dialogs::Outcome::None => Vec::new(),
            dialogs::Outcome::Answer(mut command) => {
                command.set_agent(self.agent_id());
                self.answered_here.insert(command.request_id().to_string());
                self.dialog = None;
                self.send_plain(command.into_command());
                // The request stays pending until the server resolves it; the next one
                // (if any) opens then.
                Vec::new()
            }
            dialogs::Outcome::Editor { request_id, text } => vec![Action::Editor {
                request_id: Some(request_id),
                text,
            }],
            dialogs::Outcome::Picked(action, value) => {
                self.dialog = None;
                slash::picked(self, action, value)
            }
            dialogs::Outcome::Closed => {
                self.dialog = None;
                Vec::new()
            }
        }
    }

    /// The text `$EDITOR` returned.
    pub fn editor_done(&mut self, request_id: Option<String>, text: Option<String>) {
        self.dirty = true;
        match request_id {
            None => {
                if let Some(t) = text {
                    self.editor.set(t.trim_end_matches('\n').to_string());
                }
            }
            Some(request_id) => {
                self.dialog = None;
                self.answered_here.insert(request_id.clone());
                let agent_id = self.agent_id();
                self.send_plain(Command::UiResponse(UiResponse {
                    agent_id,
                    request_id,
                    value: text.map(shard_protocol::types::UiValue::Text),
                }));
            }
        }
    }
}
