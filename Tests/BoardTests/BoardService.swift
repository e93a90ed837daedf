import TestSupport

/// `obscura run` on the board as a board test starts it: its configuration
/// in /tmp/svc/obscura.toml (on `board`, with `recording`'s lines in its
/// [recording] table; photos, control socket (or `socket`) and metrics every
/// second in /tmp/svc), its log in /tmp/svc/log. `$o` is obscura, `$p` the service,
/// `said PATTERN` whether its log has it. Ready when the script goes on.
/// `tables`: more of the configuration (e.g. a [health] table).
///
/// What a test waits on is read from the log and the metrics file, or asked
/// of the control socket with `ask COMMAND` (board/virtual/ask: the socket's
/// JSON reply, as `obscura status --json` prints it), never by starting
/// `obscura status` over and over: the debug build links some 160 shared
/// libraries, and starting it costs seconds on the emulated board (about
/// 20 s a look when slowed, the service recording beside it), which would
/// be the test's measure rather than the service's. `metric NAME` is a
/// series' value in the metrics file (0 before it has one; its labels
/// spelled as there, e.g. `obscura_system_pressure{level="fair"}`);
/// `holds WATCH CONDITION` whether the log last said the watch's condition
/// was declared (`picture: dark (…` more often than `picture: dark cleared`).
/// `led` is the values the status LED took over two seconds, sorted ("1 ":
/// steady on; "0 1 ": blinking), read by the shell itself from gpio-sim's
/// file between pauses that start no process under bash (a program started
/// per read costs a second when slowed: the tests that time a watch run
/// their script with `shell: "bash"`). Needs board/virtual/waiting.sh sourced.
enum BoardService {
    static func started(board: String, recording: String, tables: String = "",
                        socket: String = "/tmp/svc/control.sock", live: String = "/tmp/svc/live.sock") -> String {
        """
        cat > /tmp/svc/obscura.toml <<'T'
        board = "\(board)"
        [recording]
        \(recording)
        [photo]
        folder = "/tmp/svc/photos"
        [control]
        socket = "\(socket)"
        [live]
        socket = "\(live)"
        [metrics]
        file = "/tmp/svc/obscura.prom"
        interval_seconds = 1
        \(tables)
        T
        o=\(packageRoot)/.build/debug/obscura
        $o run --config /tmp/svc/obscura.toml > /tmp/svc/log 2>&1 &
        p=$!
        said() { grep -q "$1" /tmp/svc/log; }
        metric() { v=$(awk -v n="$1" '$1 == n { print $2; exit }' /tmp/svc/obscura.prom 2>/dev/null); echo "${v:-0}"; }
        ask() { \(packageRoot)/board/virtual/ask "\(socket)" "$@"; }
        led() { f=$(gpio-sim value-file status-led); i=0; while [ $i -lt 20 ]; do read -r v < "$f"; echo "$v"; pause 0.1; i=$((i + 1)); done | sort -u | tr '\\n' ' '; }
        holds() { awk -v d="$1: $2 (" -v c="$1: $2 cleared" 'index($0, d) { n++ } index($0, c) { m++ } END { exit !(n > m) }' /tmp/svc/log; }
        wait_for 120 "the service to be ready" said ready
        """
    }
}
