//! shard-daemon
