//! Typed pickers over the protocol's events, shared by the test harnesses that read a
//! Runtime's events (`crates/shard-cli/tests/cli/harness.rs`, the agent crate's in-process
//! suite): `pick::tool_result(&event)` is the payload when the event is a `tool_result`.
#![allow(dead_code)]

use std::borrow::Borrow;

use shard_protocol::Event;
use shard_protocol::event::{
    ErrorEvent, Hello, MessageComplete, MessageDelta, ModeChanged, ModelChanged, PermissionRequest,
    PermissionResolved, ReasoningLevelChanged, Response, Sync, ToolCallEvent, ToolResultEvent,
    TurnEnd, TurnStart, UiRequest, UsageEvent,
};

/// `picker!(name, Variant, Payload)`: `name(e)` is a clone of the payload of `e` when it
/// is `Event::Variant` (boxed or not).
macro_rules! picker {
    ($name:ident, $variant:ident, $ty:ty) => {
        pub fn $name(e: &Event) -> Option<$ty> {
            match e {
                Event::$variant(x) => Some(Borrow::<$ty>::borrow(x).clone()),
                _ => None,
            }
        }
    };
}

picker!(sync, Sync, Sync);
picker!(message_complete, MessageComplete, MessageComplete);
picker!(tool_call, ToolCall, ToolCallEvent);
picker!(tool_result, ToolResult, ToolResultEvent);
picker!(turn_start, TurnStart, TurnStart);
picker!(turn_end, TurnEnd, TurnEnd);
picker!(error, Error, ErrorEvent);
picker!(ui_request, UiRequest, UiRequest);
picker!(permission_request, PermissionRequest, PermissionRequest);
picker!(permission_resolved, PermissionResolved, PermissionResolved);
picker!(mode_changed, ModeChanged, ModeChanged);
picker!(model_changed, ModelChanged, ModelChanged);
picker!(response, Response, Response);
picker!(hello, Hello, Hello);
picker!(message_delta, MessageDelta, MessageDelta);
picker!(usage, Usage, UsageEvent);
picker!(
    reasoning_level_changed,
    ReasoningLevelChanged,
    ReasoningLevelChanged
);
