#!/usr/bin/env bash
# The grouped class of ci/on-device-unseen.sh (the name earlier runs in benches/ give).
CLASS=grouped exec bash "$(dirname "$0")/on-device-unseen.sh" "$@"
