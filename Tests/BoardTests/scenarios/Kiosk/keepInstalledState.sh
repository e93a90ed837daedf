#!/bin/bash
# An installed kiosk's state kept aside before the first scenario of a
# shared boot (Tests/BoardTests/scenarios/group.sh --prelude).
cp /etc/obscura/obscura.toml /run/obscura-board-installed.toml
cp /etc/obscura/fetch_authorized_keys /run/obscura-board-installed.keys
cp /etc/obscura/view_authorized_keys /run/obscura-board-installed.view-keys
