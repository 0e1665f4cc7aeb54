//! shard-client
