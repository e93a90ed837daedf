#!/bin/bash
# Between the scenarios of an installed kiosk's shared boot (group.sh
# --between): the service as a fresh boot has it.
[ -s /tmp/pull/sshd.pid ] && kill "$(cat /tmp/pull/sshd.pid)"
systemctl stop prometheus prometheus-node-exporter
rm -rf /tmp/pull /tmp/svc
systemctl stop obscura
cp /run/obscura-board-installed.toml /etc/obscura/obscura.toml
cp /run/obscura-board-installed.keys /etc/obscura/fetch_authorized_keys
cp /run/obscura-board-installed.view-keys /etc/obscura/view_authorized_keys
rm -rf /var/lib/obscura/recordings/* /var/lib/obscura/photos/* /var/lib/obscura/incoming/*
journalctl --rotate
sleep 1.1  # (the rotated journal older than the second the vacuum keeps)
journalctl --vacuum-time=1s
systemctl reset-failed obscura
systemctl start obscura || echo "between: systemctl start obscura failed: $(systemctl is-active obscura)"
. board/virtual/waiting.sh
idle() { obscura status 2>/dev/null | grep -q '^state: idle'; }
wait_for 120 "the service to be idle after its start" idle
