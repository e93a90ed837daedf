/// `obscura run` on the board as a board test starts it: its configuration
/// in /tmp/svc/obscura.toml (on `board`, with `recording`'s lines in its
/// [recording] table; photos, control socket and metrics every second in
/// /tmp/svc), its log in /tmp/svc/log. `$o` is obscura, `$p` the service,
/// `said PATTERN` whether its log has it. Ready when the script goes on.
/// `tables`: more of the configuration (e.g. a [health] table).
///
/// What a test waits on is read from the log and the metrics file, never by
/// asking `obscura status` over and over: starting the debug build costs
/// seconds on the emulated board (12 s a look when slowed), which would be
/// the test's measure rather than the service's. `metric NAME` is a
/// series' value in the metrics file (0 before it has one; its labels
/// spelled as there, e.g. `obscura_system_pressure{level="fair"}`);
/// `holds WATCH CONDITION` whether the log last said the watch's condition
/// was declared (`picture: dark (…` more often than `picture: dark cleared`).
/// `led` is the values the status LED took over two seconds, sorted ("1 ":
/// steady on; "0 1 ": blinking), read by the shell itself from gpio-sim's
/// file (a program started per read costs a second when slowed).
enum BoardService {
    static func started(board: String, recording: String, tables: String = "") -> String {
        """
        cat > /tmp/svc/obscura.toml <<'T'
        board = "\(board)"
        [recording]
        \(recording)
        [photo]
        folder = "/tmp/svc/photos"
        [control]
        socket = "/tmp/svc/control.sock"
        [metrics]
        file = "/tmp/svc/obscura.prom"
        interval_seconds = 1
        \(tables)
        T
        o=.build/debug/obscura
        $o run --config /tmp/svc/obscura.toml > /tmp/svc/log 2>&1 &
        p=$!
        said() { grep -q "$1" /tmp/svc/log; }
        metric() { v=$(awk -v n="$1" '$1 == n { print $2; exit }' /tmp/svc/obscura.prom 2>/dev/null); echo "${v:-0}"; }
        led() { f=$(gpio-sim value-file status-led); for i in $(seq 20); do read -r v < "$f"; echo "$v"; sleep 0.1; done | sort -u | tr '\\n' ' '; }
        holds() { [ "$(grep -c "$1: $2 (" /tmp/svc/log)" -gt "$(grep -c "$1: $2 cleared" /tmp/svc/log)" ]; }
        wait_for 120 "the service to be ready" said ready
        """
    }
}
