//! shard-agent
