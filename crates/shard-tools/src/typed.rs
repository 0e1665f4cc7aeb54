//! The typed-tool layer: one Rust type per tool gives both the JSON Schema the model
//! sees and the deserialization of its arguments, so the two cannot drift apart.

use futures::future::BoxFuture;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use shard_protocol::types::{PermissionDetail, RenderDescriptor};

use crate::tool::{Tool, ToolContext, ToolOutput};

/// A tool whose arguments are one typed value.
///
/// Wrap it in [`Typed`] to get a [`Tool`]; the wrapper derives the schema and turns
/// invalid arguments into an error result that names the offending field.
pub trait TypedTool: Send + Sync + 'static {
    /// The argument type; its `JsonSchema` is what the model is shown.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;
    /// Name the model uses.
    const NAME: &'static str;
    /// Description for the model.
    const DESCRIPTION: &'static str;
    /// Read-only tools run without asking and may run concurrently.
    const READ_ONLY: bool;

    /// The classification of one call; [`Self::READ_ONLY`] unless a tool's effect
    /// depends on its arguments.
    fn is_read_only(&self, _args: &serde_json::Value) -> bool {
        Self::READ_ONLY
    }

    /// A preview shown before the tool runs.
    fn start_render(&self, _args: &Self::Args, _ctx: &ToolContext) -> Option<RenderDescriptor> {
        None
    }

    /// What the call would change, for its permission request ([`Tool::permission_details`]).
    fn permission_details(&self, _args: &Self::Args, _ctx: &ToolContext) -> Vec<PermissionDetail> {
        Vec::new()
    }

    /// Runs the call with arguments that already deserialized.
    fn run<'a>(&'a self, args: Self::Args, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput>;
}

/// Adapter that makes a [`TypedTool`] a [`Tool`]; the schema is computed once.
pub struct Typed<T: TypedTool> {
    inner: T,
    schema: Value,
}

impl<T: TypedTool> Typed<T> {
    /// Wraps a typed tool.
    pub fn new(inner: T) -> Self {
        Typed {
            inner,
            schema: schema_for::<T::Args>(),
        }
    }
}

impl<T: TypedTool> Tool for Typed<T> {
    fn name(&self) -> &str {
        T::NAME
    }

    fn description(&self) -> &str {
        T::DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    fn is_read_only(&self, args: &Value) -> bool {
        self.inner.is_read_only(args)
    }

    fn start_render(&self, args: &Value, ctx: &ToolContext) -> Option<RenderDescriptor> {
        let args = parse_args::<T::Args>(T::NAME, args.clone()).ok()?;
        self.inner.start_render(&args, ctx)
    }

    fn permission_details(&self, args: &Value, ctx: &ToolContext) -> Vec<PermissionDetail> {
        match parse_args::<T::Args>(T::NAME, args.clone()) {
            Ok(args) => self.inner.permission_details(&args, ctx),
            Err(_) => Vec::new(),
        }
    }

    fn execute<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        match parse_args::<T::Args>(T::NAME, args) {
            Ok(args) => self.inner.run(args, ctx),
            Err(message) => Box::pin(async move { ToolOutput::error(message) }),
        }
    }
}

/// Deserializes arguments, naming the failing field in the error so the model can
/// correct exactly that field.
pub fn parse_args<A: DeserializeOwned>(tool: &str, args: Value) -> Result<A, String> {
    // Some models send `null` or nothing for a tool without required arguments.
    let args = if args.is_null() {
        Value::Object(Map::new())
    } else {
        args
    };
    serde_path_to_error::deserialize::<_, A>(args).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        if path == "." || path.is_empty() {
            format!("invalid arguments for `{tool}`: {inner}")
        } else {
            format!("invalid arguments for `{tool}`: field `{path}`: {inner}")
        }
    })
}

/// The plain JSON Schema of an argument type: an inlined object schema without
/// `$schema`, `$defs`, `$ref` or nullable unions, which every provider accepts.
pub fn schema_for<A: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let root = settings.into_generator().into_root_schema_for::<A>();
    let mut value = root.to_value();
    if let Value::Object(map) = &mut value {
        map.remove("$schema");
        map.remove("title");
        map.remove("$defs");
        // The type's own doc ("Arguments of `read`") says nothing the tool description does not.
        map.remove("description");
    }
    simplify(&mut value);
    value
}

/// A `oneOf` of string constants (a documented Rust enum) as a plain `enum`, which
/// every provider understands. The variants' docs are dropped: they are written for the
/// code's readers, and every request would repeat them; the tool's description (or the
/// field's) says what the model needs of each value.
fn const_union_to_enum(map: &mut Map<String, Value>) {
    let Some(Value::Array(variants)) = map.get("oneOf") else {
        return;
    };
    let mut names = Vec::new();
    for v in variants {
        let (Some(name), Some("string")) = (
            v.get("const").and_then(Value::as_str),
            v.get("type").and_then(Value::as_str),
        ) else {
            return;
        };
        names.push(Value::String(name.to_string()));
    }
    map.remove("oneOf");
    map.insert("type".into(), Value::String("string".into()));
    map.insert("enum".into(), Value::Array(names));
}

/// Removes what some providers reject: `null` in type unions (an absent optional field
/// already means "not given") and the non-standard integer formats schemars emits.
fn simplify(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    map.insert("type".into(), only);
                }
            }
            for key in ["anyOf", "oneOf"] {
                let single = match map.get_mut(key) {
                    Some(Value::Array(variants)) => {
                        variants.retain(|v| v.get("type").is_none_or(|t| t != "null"));
                        (variants.len() == 1).then(|| variants.remove(0))
                    }
                    _ => None,
                };
                if let Some(Value::Object(inner)) = single {
                    map.remove(key);
                    for (k, v) in inner {
                        map.entry(k).or_insert(v);
                    }
                }
            }
            const_union_to_enum(map);
            // `#[serde(default)]` on an Option emits `"default": null`, which contradicts
            // the field's type for strict validators; absence already means "not given".
            // Likewise `false` for a flag, and `minimum: 0` for a count (a negative number
            // fails to deserialize with an error naming the field): bytes on every request.
            if map
                .get("default")
                .is_some_and(|d| d.is_null() || *d == Value::Bool(false))
            {
                map.remove("default");
            }
            if map.get("minimum").and_then(Value::as_u64) == Some(0) {
                map.remove("minimum");
            }
            // Doc comments keep their line wrapping; models read one paragraph better.
            if let Some(Value::String(d)) = map.get_mut("description")
                && d.contains('\n')
            {
                *d = d.split_whitespace().collect::<Vec<_>>().join(" ");
            }
            let nonstandard_format = map.get("format").and_then(Value::as_str).is_some_and(|f| {
                f.starts_with("int") || f.starts_with("uint") || f == "double" || f == "float"
            });
            if nonstandard_format {
                map.remove("format");
            }
            for v in map.values_mut() {
                simplify(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(simplify),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde::Deserialize;

    /// Test arguments.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        /// A path.
        path: String,
        /// How many.
        limit: Option<u32>,
        /// Inner.
        items: Option<Vec<Item>>,
        /// Mode.
        #[serde(default)]
        mode: Option<Mode>,
    }

    /// Test enum.
    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code)]
    enum Mode {
        /// Quick.
        Fast,
        /// Thorough.
        Slow,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Item {
        name: String,
    }

    #[test]
    fn schema_is_plain_and_inlined() {
        let s = schema_for::<Args>();
        let text = s.to_string();
        assert!(!text.contains("$ref"), "{text}");
        assert!(!text.contains("$defs"), "{text}");
        assert!(!text.contains("$schema"), "{text}");
        assert!(!text.contains("null"), "{text}");
        assert_eq!(s["type"], "object");
        assert_eq!(s["properties"]["limit"]["type"], "integer");
        assert_eq!(
            s["properties"]["items"]["items"]["properties"]["name"]["type"],
            "string"
        );
        assert_eq!(s["required"], serde_json::json!(["path"]));
        assert!(s["properties"]["limit"].get("default").is_none());
        assert_eq!(
            s["properties"]["mode"]["enum"],
            serde_json::json!(["fast", "slow"])
        );
        assert_eq!(s["properties"]["mode"]["type"], "string");
        assert!(s.get("description").is_none());
    }

    #[test]
    fn errors_name_the_field() {
        let err = parse_args::<Args>("t", serde_json::json!({"path": "a", "limit": "x"}))
            .err()
            .unwrap();
        assert!(err.contains("`limit`"), "{err}");
        let err = parse_args::<Args>(
            "t",
            serde_json::json!({"path": "a", "items": [{"name": 3}]}),
        )
        .err()
        .unwrap();
        assert!(err.contains("items[0].name"), "{err}");
        let err = parse_args::<Args>("t", serde_json::json!({}))
            .err()
            .unwrap();
        assert!(err.contains("path"), "{err}");
    }
}
