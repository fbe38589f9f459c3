//! Error paths shared by every command.
