#!/bin/sh
# The board's side of MetricsBoardTests.theDocumentedAlertRulesFireWhenTheMetricsFileGoesStale: it prints what the test reads.
# Arguments: FOLDER
folder=$1
cd "$folder" || exit 1
promtool check rules rules.yml > check.out 2>&1; echo "check-rc=$?"; sed 's/^/check: /' check.out
promtool test rules test.yml > test.out 2>&1; echo "test-rc=$?"; sed 's/^/test: /' test.out
