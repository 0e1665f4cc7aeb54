//! shard-session
