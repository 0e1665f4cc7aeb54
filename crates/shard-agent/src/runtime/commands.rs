//! Command handling, shared by the idle loop and the turn loop.

use shard_protocol::command::{SessionOpArgs, SessionOpKind, StreamingBehavior, kind};
use shard_protocol::event::{Effective, ModeChanged, ModelChanged, ReasoningLevelChanged};
use shard_protocol::responses::{
    ListModelsData, ListModesData, ReasoningLevelsData, SessionListData, SessionOpData,
    SetModeData, SetModelData, SetReasoningLevelData, SteerData, SteerOutcome,
};
use shard_protocol::{ClientMessage, Command, ErrorCode, Event};
use shard_session::{EntryKind, SessionError};

use super::conversation::LIVE_WINDOW_BUDGET;

use super::Runtime;
use super::flight::{PendingSteer, UserInput};

impl Runtime {
    pub(crate) async fn handle_command(&mut self, msg: ClientMessage) {
        let id = msg.id;
        let name = msg.command.type_name();
        match msg.command {
            Command::Prompt(p) => {
                let input = UserInput {
                    text: p.message,
                    images: p.images.unwrap_or_default(),
                };
                self.accept_prompt(id, name, input, p.streaming_behavior)
                    .await;
            }
            Command::Steer(s) => {
                let strict = s.is_strict();
                let input = UserInput {
                    text: s.message,
                    images: s.images.unwrap_or_default(),
                };
                if strict {
                    self.accept_strict_steer(id, name, input, s.turn_id).await;
                } else {
                    self.accept_prompt(id, name, input, Some(StreamingBehavior::Steer))
                        .await;
                }
            }
            Command::Abort(_) => {
                if self.flight.turn.is_some() {
                    self.request_abort();
                }
                self.emit(Event::ok(id, name, None)).await;
            }
            Command::SetMode(c) => self.set_mode(id, name, &c.mode).await,
            Command::ListModes(_) => {
                let data = ListModesData {
                    modes: self.choice.modes.descriptors(),
                    active: self.choice.modes.active().name.clone(),
                };
                self.emit(Event::answer::<kind::ListModes>(id, &data)).await;
            }
            Command::ListModels(_) => {
                let data = ListModelsData {
                    models: self.choice.models.catalog(),
                    active: self.choice.models.descriptor(),
                };
                self.emit(Event::answer::<kind::ListModels>(id, &data))
                    .await;
            }
            Command::SetModel(c) => self.set_model(id, name, &c.model).await,
            Command::ListReasoningLevels(_) => {
                let levels = self.choice.models.reasoning_levels();
                if levels.is_empty() {
                    let msg = "the active model has no reasoning levels";
                    self.emit(Event::err(id, Some(name), ErrorCode::NotFound, msg))
                        .await;
                    return;
                }
                let data = ReasoningLevelsData {
                    model: self.choice.models.descriptor(),
                    active: self
                        .choice
                        .models
                        .reasoning()
                        .unwrap_or_default()
                        .to_string(),
                    levels,
                    effective: Effective::NextProviderCall,
                };
                self.emit(Event::answer::<kind::ListReasoningLevels>(id, &data))
                    .await;
            }
            Command::SetReasoningLevel(c) => {
                self.set_reasoning(id, name, &c.model, &c.effort).await
            }
            Command::SessionOp(op) => match op.op {
                SessionOpKind::List => self.list_sessions(id, name).await,
                SessionOpKind::Compact => self.request_compact(id, name, op.args).await,
                SessionOpKind::Fork => self.fork(id, name, op.args).await,
                SessionOpKind::History => self.history(id, name, op.args).await,
            },
            Command::PermissionResponse(r) => {
                self.toolbox.answer_permission(&r);
                self.emit(Event::ok(id, name, None)).await;
            }
            Command::UiResponse(r) => {
                self.emit(Event::ok(id, name, None)).await;
                let value = serde_json::to_value(&r.value).unwrap_or(serde_json::Value::Null);
                self.answer_ui(&r.request_id, value).await;
            }
            Command::ClientFiles(c) => {
                self.toolbox.editor.offer(c.read, c.write);
                self.emit(Event::ok(id, name, None)).await;
            }
            Command::FileResponse(r) => {
                self.toolbox
                    .editor
                    .answer(&r.request_id, r.content, r.error);
                self.emit(Event::ok(id, name, None)).await;
            }
            Command::RequestSync(_) => {
                let sync = self.build_sync().await;
                self.emit(sync).await;
                self.emit(Event::ok(id, name, None)).await;
            }
            other => {
                let msg = format!(
                    "`{}` is an orchestrator command; this is a direct connection to one agent",
                    other.type_name()
                );
                self.emit(Event::err(id, Some(name), ErrorCode::InvalidRequest, msg))
                    .await;
            }
        }
    }

    async fn accept_prompt(
        &mut self,
        id: Option<String>,
        name: &str,
        input: UserInput,
        behavior: Option<StreamingBehavior>,
    ) {
        let model = self.choice.active_info();
        if let Some(why) = crate::images::check_images(&input.images, model.as_ref()) {
            self.emit(Event::err(id, Some(name), ErrorCode::InvalidRequest, why))
                .await;
            return;
        }
        if !self.flight.busy() {
            self.flight.start_next = Some(input);
            self.emit(Event::ok(id, name, None)).await;
            return;
        }
        match behavior {
            Some(StreamingBehavior::Steer) => self.flight.steers.push(PendingSteer {
                input,
                strict: None,
            }),
            Some(StreamingBehavior::FollowUp) => self.flight.follow_ups.push_back(input),
            None => {
                let msg = "the agent is busy with a turn: send the prompt with \
                           streaming_behavior \"steer\" or \"follow_up\"";
                self.emit(Event::err(id, Some(name), ErrorCode::Conflict, msg))
                    .await;
                return;
            }
        }
        self.emit(Event::ok(id, name, None)).await;
    }

    /// A strict steer joins the running turn (answered when it is injected or dropped),
    /// or is answered `conflict` now: it never waits for, or starts, another turn.
    async fn accept_strict_steer(
        &mut self,
        id: Option<String>,
        name: &str,
        input: UserInput,
        wanted: Option<String>,
    ) {
        let model = self.choice.active_info();
        if let Some(why) = crate::images::check_images(&input.images, model.as_ref()) {
            self.emit(Event::err(id, Some(name), ErrorCode::InvalidRequest, why))
                .await;
            return;
        }
        let running = self
            .flight
            .turn
            .as_ref()
            .filter(|t| !t.is_aborted())
            .map(|t| t.turn_id.clone());
        match running {
            Some(turn) if wanted.as_ref().is_none_or(|w| *w == turn) => {
                self.flight.steers.push(PendingSteer {
                    input,
                    strict: Some(id),
                });
            }
            other => {
                let turn_id = wanted.or(other);
                self.answer_steer(id, SteerOutcome::Conflict, turn_id).await;
            }
        }
    }

    /// The deferred answer of a strict steer.
    pub(super) async fn answer_steer(
        &mut self,
        id: Option<String>,
        status: SteerOutcome,
        turn_id: Option<String>,
    ) {
        let data = SteerData { status, turn_id };
        self.emit(Event::answer::<kind::Steer>(id, &Some(data)))
            .await;
    }

    async fn set_mode(&mut self, id: Option<String>, name: &str, mode: &str) {
        if self.choice.modes.active().name == mode {
            let data = SetModeData {
                previous_mode: mode.to_string(),
                mode: mode.to_string(),
            };
            self.emit(Event::answer::<kind::SetMode>(id, &data)).await;
            return;
        }
        let previous = match self.choice.modes.set(mode) {
            Ok(p) => p,
            Err(e) => {
                self.emit(Event::err(
                    id,
                    Some(name),
                    ErrorCode::NotFound,
                    e.to_string(),
                ))
                .await;
                return;
            }
        };
        let entry = EntryKind::ModeChange {
            mode: mode.to_string(),
        };
        if let Err(e) = self.conv.session.append(entry) {
            let _ = self.choice.modes.set(&previous);
            let msg = format!("could not record the mode change: {e}");
            self.emit(Event::err(id, Some(name), ErrorCode::InternalError, msg))
                .await;
            return;
        }
        self.emit(Event::ModeChanged(ModeChanged {
            agent_id: None,
            previous_mode: previous.clone(),
            mode: mode.to_string(),
        }))
        .await;
        let data = SetModeData {
            previous_mode: previous,
            mode: mode.to_string(),
        };
        self.emit(Event::answer::<kind::SetMode>(id, &data)).await;
    }

    async fn set_model(&mut self, id: Option<String>, name: &str, model: &str) {
        let previous = self.choice.models.descriptor();
        let previous_level = self.choice.models.reasoning().map(str::to_string);
        if let Err(e) = self.choice.models.select_id(model) {
            self.emit(Event::err(id, Some(name), ErrorCode::NotFound, e.0))
                .await;
            return;
        }
        let active = self.choice.models.descriptor();
        let entry = EntryKind::ModelChange {
            provider: active.provider.clone(),
            model: active.model.clone(),
        };
        if let Err(e) = self.conv.session.append(entry) {
            tracing::error!(error = %e, "could not record the model change");
        }
        // A switch may change the level too (the new model lacks the old one): record it,
        // so a resume restores this exact pair.
        if let Some(level) = self.choice.models.reasoning()
            && previous_level.as_deref() != Some(level)
        {
            let entry = EntryKind::ReasoningLevelChange {
                level: level.to_string(),
            };
            if let Err(e) = self.conv.session.append(entry) {
                tracing::error!(error = %e, "could not record the reasoning level");
            }
        }
        self.emit(Event::ModelChanged(Box::new(ModelChanged {
            agent_id: None,
            previous: previous.clone(),
            active: active.clone(),
            effective: Effective::NextProviderCall,
            capabilities: Some(self.capabilities()),
        })))
        .await;
        let data = SetModelData {
            previous,
            active,
            effective: Effective::NextProviderCall,
            notice: self.choice.models.notice(),
        };
        self.emit(Event::answer::<kind::SetModel>(id, &data)).await;
    }

    async fn set_reasoning(&mut self, id: Option<String>, name: &str, model: &str, effort: &str) {
        let active = self.choice.models.descriptor();
        if active.id != model {
            let msg = format!(
                "the active model is `{}`, not `{model}`: refresh the picker",
                active.id
            );
            self.emit(Event::err(id, Some(name), ErrorCode::Conflict, msg))
                .await;
            return;
        }
        let previous = self
            .choice
            .models
            .reasoning()
            .unwrap_or_default()
            .to_string();
        if let Err(e) = self.choice.models.set_reasoning(effort) {
            self.emit(Event::err(id, Some(name), ErrorCode::NotFound, e.0))
                .await;
            return;
        }
        if previous != effort {
            let entry = EntryKind::ReasoningLevelChange {
                level: effort.to_string(),
            };
            if let Err(e) = self.conv.session.append(entry) {
                tracing::error!(error = %e, "could not record the reasoning level");
            }
            self.emit(Event::ReasoningLevelChanged(ReasoningLevelChanged {
                agent_id: None,
                model: active.clone(),
                previous: previous.clone(),
                active: effort.to_string(),
                effective: Effective::NextProviderCall,
            }))
            .await;
        }
        let data = SetReasoningLevelData {
            model: active,
            previous,
            active: effort.to_string(),
            effective: Effective::NextProviderCall,
        };
        self.emit(Event::answer::<kind::SetReasoningLevel>(id, &data))
            .await;
    }

    async fn list_sessions(&mut self, id: Option<String>, name: &str) {
        let store = self.conv.store.clone();
        let cwd = self.opts.cwd.clone();
        let listed = tokio::task::spawn_blocking(move || store.list_for_cwd(&cwd))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()));
        let metas = match listed {
            Ok(m) => m,
            Err(e) => {
                let msg = format!("could not list sessions: {e}");
                self.emit(Event::err(id, Some(name), ErrorCode::InternalError, msg))
                    .await;
                return;
            }
        };
        let current = self.conv.session.id().to_string();
        let sessions = metas
            .iter()
            .map(|m| m.to_summary(m.session_id == current))
            .collect();
        let data = SessionListData { sessions };
        self.emit(Event::answer::<kind::SessionOp>(
            id,
            &SessionOpData::List(data),
        ))
        .await;
    }
}

/// Default byte budget of one `session_op history` page.
pub const HISTORY_DEFAULT_BYTES: usize = 1024 * 1024;
/// Smallest page budget honoured, so a tiny `max_bytes` still makes progress.
const HISTORY_MIN_BYTES: usize = 4 * 1024;

impl Runtime {
    /// `session_op history`: a read-only page of older messages, read on a
    /// blocking thread like the live window.
    async fn history(&mut self, id: Option<String>, name: &str, args: Option<SessionOpArgs>) {
        let args = args.unwrap_or_default();
        let Some(before) = args.before.filter(|b| !b.is_empty()) else {
            let msg = "`session_op history` needs `args.before`: a message id such as \
                       `sync.live_window.truncated_before`";
            self.emit(Event::err(id, Some(name), ErrorCode::InvalidRequest, msg))
                .await;
            return;
        };
        // Never more than the live window: a lowered window (SHARD_LIVE_WINDOW_BYTES) pages
        // in steps of its own size.
        let most = self.conv.live_window_budget;
        let budget = args
            .max_bytes
            .map_or(HISTORY_DEFAULT_BYTES, |b| {
                usize::try_from(b).unwrap_or(LIVE_WINDOW_BUDGET)
            })
            .clamp(HISTORY_MIN_BYTES.min(most), most);
        // The page's own error stays typed: an unknown id is NOT_FOUND, not a failure.
        let page = match self
            .conv
            .read_session(move |reader| Ok(reader.history(&before, budget)))
            .await
        {
            Ok(Ok(page)) => Ok(page),
            Ok(Err(SessionError::NotFound(m))) => Err((ErrorCode::NotFound, m)),
            Ok(Err(other)) => Err((ErrorCode::InternalError, other.to_string())),
            Err(e) => Err((ErrorCode::InternalError, e)),
        };
        match page {
            Ok(data) => {
                self.emit(Event::answer::<kind::SessionOp>(
                    id,
                    &SessionOpData::History(data),
                ))
                .await
            }
            Err((code, msg)) => self.emit(Event::err(id, Some(name), code, msg)).await,
        }
    }
}
