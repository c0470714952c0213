//! Unit tests of the session against a real mock model server.
