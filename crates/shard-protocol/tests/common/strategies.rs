//! proptest strategies for a representative set of commands and events. Strings are
//! biased towards what breaks line framing and JSON escaping: `\n`, `\r`, U+2028, U+2029,
//! quotes, backslashes, control characters and astral-plane characters.

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use serde_json::{Map, Value};
use shard_protocol::command::*;
use shard_protocol::event::*;
use shard_protocol::permission::PermissionAnswer;
use shard_protocol::types::*;
use shard_protocol::{ClientMessage, Command, ErrorBody, ErrorCode, Event};

/// A string that likes the characters that break framing.
pub fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-z \n\r\t\"\\\\\u{2028}\u{2029}\u{0}\u{1b}é🦀]{0,24}",
    ]
}

/// A float with a short decimal form. serde_json's default float parsing is best-effort
/// (exact only without the `float_roundtrip` feature for short decimals), so the round
/// trip property is stated for the floats the protocol really carries: costs, seconds.
fn decimal() -> impl Strategy<Value = f64> {
    (-1_000_000_000i64..1_000_000_000).prop_map(|n| n as f64 / 1000.0)
}

fn opt_text() -> impl Strategy<Value = Option<String>> {
    option::of(text())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        decimal().prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            vec((text(), inner), 0..4).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Map<String, Value>> {
    vec((text(), json_value()), 0..4).prop_map(|kv| kv.into_iter().collect())
}

fn image() -> impl Strategy<Value = Image> {
    ("[A-Za-z0-9+/=]{0,16}", "image/(png|jpeg|gif)").prop_map(|(data, mime_type)| Image {
        kind: ImageTag::Image,
        data,
        mime_type,
    })
}

fn decision() -> impl Strategy<Value = PermissionDecision> {
    prop_oneof![
        Just(PermissionDecision::Allow),
        Just(PermissionDecision::AllowAlways),
        Just(PermissionDecision::Deny)
    ]
}

fn answer() -> impl Strategy<Value = PermissionAnswer> {
    prop_oneof![
        text()
            .prop_filter("choice ids are non-empty", |s| !s.is_empty())
            .prop_map(|choice_id| PermissionAnswer::Choice { choice_id }),
        decision().prop_map(|decision| PermissionAnswer::Decision { decision }),
    ]
}

fn status() -> impl Strategy<Value = AgentStatus> {
    prop_oneof![
        Just(AgentStatus::Idle),
        Just(AgentStatus::Streaming),
        Just(AgentStatus::WaitingForPermission),
        Just(AgentStatus::WaitingForUi),
        Just(AgentStatus::Compacting),
        Just(AgentStatus::Error),
    ]
}

fn render() -> impl Strategy<Value = RenderDescriptor> {
    prop_oneof![
        text().prop_map(|text| RenderDescriptor::Text { text }),
        vec((text(), text()).prop_map(|(k, v)| KvPair { k, v }), 0..3)
            .prop_map(|pairs| RenderDescriptor::Kv { pairs }),
        (text(), any::<u64>(), option::of(any::<u64>())).prop_map(|(label, current, total)| {
            RenderDescriptor::Progress {
                label,
                current,
                total,
            }
        }),
        (text(), option::of(any::<i64>()), option::of(any::<u64>())).prop_map(
            |(command, exit_code, duration_ms)| {
                RenderDescriptor::Command {
                    command,
                    exit_code,
                    duration_ms,
                }
            }
        ),
        (opt_text(), opt_text(), text()).prop_map(|(path, lang, text)| RenderDescriptor::Code {
            path,
            lang,
            text
        }),
        vec(
            (
                text(),
                prop_oneof![Just(PathKind::File), Just(PathKind::Dir)],
                opt_text()
            )
                .prop_map(|(path, kind, hint)| PathListEntry { path, kind, hint }),
            0..3
        )
        .prop_map(|paths| RenderDescriptor::PathList { paths }),
    ]
}

fn result_content() -> impl Strategy<Value = ToolResultContent> {
    prop_oneof![
        text().prop_map(|text| ToolResultContent::Text { text }),
        json_value().prop_map(|value| ToolResultContent::Json { value }),
        text().prop_map(|message| ToolResultContent::Error { message }),
        image().prop_map(|i| ToolResultContent::Image {
            data: i.data,
            mime_type: i.mime_type
        }),
    ]
}

fn block() -> impl Strategy<Value = ContentBlock> {
    prop_oneof![
        text().prop_map(|text| ContentBlock::Text { text }),
        (text(), text(), json_object()).prop_map(|(id, name, args)| ContentBlock::ToolCall {
            id,
            name,
            args
        }),
        (
            text(),
            result_content(),
            option::of(any::<bool>()),
            option::of(any::<i64>()),
            option::of(render())
        )
            .prop_map(|(tool_call_id, content, is_error, exit_code, render)| {
                ContentBlock::ToolResult {
                    tool_call_id,
                    content,
                    is_error,
                    exit_code,
                    duration_ms: None,
                    render,
                    images: None,
                }
            }),
        (text(), opt_text())
            .prop_map(|(text, signature)| ContentBlock::Thinking { text, signature }),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    (
        text(),
        prop_oneof![Just(Role::User), Just(Role::Assistant)],
        vec(block(), 0..4),
    )
        .prop_map(|(id, role, content)| Message { id, role, content })
}

fn permission_request() -> impl Strategy<Value = PermissionRequest> {
    (
        opt_text(),
        text(),
        text(),
        json_value(),
        text(),
        vec(decision(), 0..3),
    )
        .prop_map(
            |(agent_id, request_id, tool_name, input, prompt, options)| PermissionRequest {
                agent_id,
                request_id,
                tool_name,
                input,
                prompt,
                options,
                details: None,
                choices: None,
                tool_call_id: None,
            },
        )
}

fn ui_request() -> impl Strategy<Value = UiRequest> {
    (
        opt_text(),
        text(),
        opt_text(),
        option::of(vec(text(), 0..3)),
        opt_text(),
    )
        .prop_map(
            |(agent_id, request_id, title, options, prefill)| UiRequest {
                agent_id,
                request_id,
                kind: UiKind::Select,
                title,
                message: None,
                options,
                placeholder: None,
                prefill,
                notify_type: None,
            },
        )
}

/// A representative command with an optional id.
pub fn client_message() -> impl Strategy<Value = ClientMessage> {
    let command = prop_oneof![
        (
            opt_text(),
            text(),
            option::of(vec(image(), 0..2)),
            option::of(prop_oneof![
                Just(StreamingBehavior::Steer),
                Just(StreamingBehavior::FollowUp)
            ])
        )
            .prop_map(
                |(agent_id, message, images, streaming_behavior)| Command::Prompt(Prompt {
                    agent_id,
                    message,
                    images,
                    streaming_behavior
                })
            ),
        (opt_text(), text())
            .prop_map(|(agent_id, mode)| Command::SetMode(SetMode { agent_id, mode })),
        (opt_text(), option::of(any::<u64>()), opt_text()).prop_map(|(agent_id, keep, from)| {
            Command::SessionOp(SessionOp {
                agent_id,
                op: SessionOpKind::Compact,
                args: Some(SessionOpArgs {
                    keep_recent_tokens: keep,
                    from_entry_id: from,
                    ..SessionOpArgs::default()
                }),
            })
        }),
        (opt_text(), text(), option::of(any::<u64>())).prop_map(|(agent_id, before, max)| {
            Command::SessionOp(SessionOp {
                agent_id,
                op: SessionOpKind::History,
                args: Some(SessionOpArgs {
                    before: Some(before),
                    max_bytes: max,
                    ..SessionOpArgs::default()
                }),
            })
        }),
        (opt_text(), text(), answer(), opt_text(), opt_text()).prop_map(
            |(agent_id, request_id, answer, reason, source)| {
                Command::PermissionResponse(PermissionResponse {
                    agent_id,
                    request_id,
                    answer,
                    reason,
                    source,
                })
            }
        ),
        (
            opt_text(),
            text(),
            option::of(prop_oneof![
                text().prop_map(UiValue::Text),
                vec(text(), 0..3).prop_map(UiValue::List)
            ])
        )
            .prop_map(
                |(agent_id, request_id, value)| Command::UiResponse(UiResponse {
                    agent_id,
                    request_id,
                    value
                })
            ),
        opt_text().prop_map(|agent_id| Command::RequestSync(AgentTarget { agent_id })),
        (
            text(),
            opt_text(),
            option::of(vec(text(), 0..3)),
            option::of(0u32..10)
        )
            .prop_map(|(cwd, name, tools, depth)| Command::AgentCreate(Box::new(
                AgentCreate {
                    cwd,
                    name,
                    tools,
                    depth,
                    ..Default::default()
                }
            ))),
        (text(), vec(text(), 1..3), option::of(decimal())).prop_map(
            |(parent_agent_id, handles, timeout)| {
                Command::SubagentWait(SubagentWait {
                    parent_agent_id,
                    handles,
                    mode: Some(WaitMode::Any),
                    timeout,
                })
            }
        ),
    ];
    (opt_text(), command).prop_map(|(id, command)| ClientMessage { id, command })
}

/// A representative event.
pub fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        (text(), vec(text(), 0..3)).prop_map(|(server_version, capabilities)| Event::Hello(
            Hello {
                protocol_version: "0.1.0".into(),
                server_version,
                capabilities
            }
        )),
        (
            opt_text(),
            status(),
            text(),
            vec(message(), 0..3),
            option::of(any::<u64>()),
            permission_request(),
            ui_request()
        )
            .prop_map(
                |(agent_id, status, mode, messages, epoch, p, u)| Event::Sync(Box::new(Sync {
                    agent_id,
                    status,
                    mode,
                    capabilities: None,
                    runtime_epoch: epoch,
                    session_id: None,
                    live_window: LiveWindow {
                        messages,
                        compaction_index: epoch,
                        truncated_before: None,
                        interrupted_after: None,
                        permission_answers: None
                    },
                    pending_requests: vec![
                        PendingRequest::Permission(Box::new(p)),
                        PendingRequest::Ui(u)
                    ],
                }))
            ),
        (opt_text(), text(), any::<u32>(), opt_text(), opt_text()).prop_map(
            |(agent_id, message_id, block_index, text_delta, args_delta)| {
                Event::MessageDelta(MessageDelta {
                    agent_id,
                    message_id,
                    block_index,
                    kind: DeltaKind::Text,
                    text_delta,
                    tool_call_id: None,
                    name: None,
                    args_delta,
                })
            }
        ),
        (opt_text(), text(), json_object(), option::of(render())).prop_map(
            |(agent_id, tool_call_id, args, render)| {
                Event::ToolCall(ToolCallEvent {
                    agent_id,
                    tool_call_id,
                    name: "bash".into(),
                    args,
                    render,
                    read_only: Some(false),
                })
            }
        ),
        (
            opt_text(),
            text(),
            result_content(),
            any::<bool>(),
            option::of(any::<i64>()),
            option::of(any::<u64>()),
            option::of(render())
        )
            .prop_map(
                |(agent_id, tool_call_id, content, is_error, exit_code, duration_ms, render)| {
                    Event::ToolResult(Box::new(ToolResultEvent {
                        agent_id,
                        tool_call_id,
                        content,
                        is_error,
                        exit_code,
                        duration_ms,
                        render,
                        images: None,
                    }))
                }
            ),
        permission_request().prop_map(|p| Event::PermissionRequest(Box::new(p))),
        (opt_text(), text(), answer(), opt_text()).prop_map(
            |(agent_id, request_id, answer, source)| {
                Event::PermissionResolved(PermissionResolved {
                    agent_id,
                    request_id,
                    answer,
                    source,
                })
            }
        ),
        (opt_text(), text(), json_value()).prop_map(|(agent_id, request_id, value)| {
            Event::UiResolved(UiResolved {
                agent_id,
                request_id,
                value,
            })
        }),
        (
            opt_text(),
            any::<u64>(),
            any::<u64>(),
            option::of(decimal()),
            opt_text()
        )
            .prop_map(|(agent_id, input, output, cost, model)| {
                Event::Usage(UsageEvent {
                    agent_id,
                    usage: Usage {
                        input,
                        output,
                        cost,
                        model,
                        ..Default::default()
                    },
                })
            }),
        (opt_text(), text(), text(), option::of(any::<bool>())).prop_map(
            |(agent_id, code, message, fatal)| {
                Event::Error(ErrorEvent {
                    agent_id,
                    code: ErrorCode::parse(&code),
                    message,
                    fatal,
                    kind: None,
                    retry_after_ms: None,
                })
            }
        ),
        (
            opt_text(),
            opt_text(),
            any::<bool>(),
            option::of(json_value().prop_filter("null data is absent data", |v| !v.is_null())),
            option::of((text(), text()))
        )
            .prop_map(
                |(id, command, success, data, error)| Event::Response(Response {
                    id,
                    command,
                    success,
                    data,
                    error: error.map(|(c, m)| ErrorBody::new(ErrorCode::parse(&c), m)),
                })
            ),
    ]
}
