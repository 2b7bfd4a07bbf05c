//! The AWS shared configuration files: the credentials and region of a named profile
//! (`AWS_PROFILE`, else `default`), which `object_store` does not read itself.
//!
//! `~/.aws/credentials` (or `AWS_SHARED_CREDENTIALS_FILE`) gives `aws_access_key_id`,
//! `aws_secret_access_key` and `aws_session_token`; `~/.aws/config` (or `AWS_CONFIG_FILE`)
//! gives `region` and `endpoint_url` (section `[profile NAME]`, or `[default]`). Credentials
//! set in the environment win: the caller applies these first.

use std::path::{Path, PathBuf};

/// The profile's settings as `object_store` S3 configuration keys (`aws_access_key_id`, …).
/// Empty when no file or no such profile exists, or when the environment already holds an
/// access key (a profile's secret must not pair with another key).
pub(super) fn aws_profile_config() -> Vec<(String, String)> {
    let env_key = std::env::var("AWS_ACCESS_KEY_ID").is_ok_and(|v| !v.is_empty());
    let explicit_profile = std::env::var("AWS_PROFILE").ok().filter(|p| !p.is_empty());
    let profile = explicit_profile
        .clone()
        .unwrap_or_else(|| "default".to_string());
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let file = |var: &str, name: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws").join(name)))
    };
    let mut config = Vec::new();
    if !env_key || explicit_profile.is_some() {
        if let Some(path) = file("AWS_SHARED_CREDENTIALS_FILE", "credentials") {
            for (key, value) in section(&path, &profile, false) {
                if matches!(
                    key.as_str(),
                    "aws_access_key_id" | "aws_secret_access_key" | "aws_session_token"
                ) && !env_key
                {
                    config.push((key, value));
                }
            }
        }
    }
    if let Some(path) = file("AWS_CONFIG_FILE", "config") {
        for (key, value) in section(&path, &profile, true) {
            match key.as_str() {
                "region" => config.push(("aws_region".into(), value)),
                "endpoint_url" => config.push(("aws_endpoint_url".into(), value)),
                "aws_access_key_id" | "aws_secret_access_key" | "aws_session_token" if !env_key => {
                    config.push((key, value))
                }
                _ => {}
            }
        }
    }
    config
}

/// The `key = value` lines of section `profile` of the INI file at `path` (`[profile NAME]`
/// in the config file, `[NAME]` in the credentials file; `[default]` in both).
fn section(path: &Path, profile: &str, config_file: bool) -> Vec<(String, String)> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    parse_section(&text, profile, config_file)
}

pub(super) fn parse_section(text: &str, profile: &str, config_file: bool) -> Vec<(String, String)> {
    let wanted = |header: &str| {
        let header = header.trim();
        if profile == "default" && header == "default" {
            return true;
        }
        if config_file {
            header
                .strip_prefix("profile")
                .is_some_and(|rest| rest.starts_with(char::is_whitespace) && rest.trim() == profile)
        } else {
            header == profile
        }
    };
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = wanted(header);
            continue;
        }
        if inside {
            if let Some((key, value)) = line.split_once('=') {
                out.push((key.trim().to_ascii_lowercase(), value.trim().to_string()));
            }
        }
    }
    out
}
