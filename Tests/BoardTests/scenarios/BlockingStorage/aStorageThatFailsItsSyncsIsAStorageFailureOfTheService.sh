#!/bin/sh
# The board's side of BlockingStorageBoardTests.aStorageThatFailsItsSyncsIsAStorageFailureOfTheService: it prints what the test reads.
. Tests/BoardTests/scenarios/BlockingStorage/serviceOnCard.sh
$o ctl --socket /tmp/svc/control.sock record start
grown() { [ "$(cat /mnt/card/incoming/*.partial 2>/dev/null | wc -c)" -gt 20000 ]; }
wait_for 120 "the recording to have fragments on the card" grown
dm-card error obscura-card && echo "card=dead"
wait_for 120 "the recording to end" said "storage failed"
counted() { grep -q 'obscura_errors_total{reason="storage"} [1-9]' /tmp/svc/obscura.prom; }
wait_for 30 "the metrics to count it" counted
$o status --socket /tmp/svc/control.sock | sed 's/^/status: /'
grep -E '^obscura_errors_total|^obscura_last_error' /tmp/svc/obscura.prom | sed 's/^/metric: /'
echo "alive=$(kill -0 $p 2>/dev/null && echo yes || echo no)"
grep -E "storage failed|recording finished" /tmp/svc/log | sed 's/^/log: /'
kill -TERM $p; wait $p
