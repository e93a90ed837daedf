/// `obscura run` on the board as a board test starts it: its configuration
/// in /tmp/svc/obscura.toml (on `board`, with `recording`'s lines in its
/// [recording] table; photos, control socket and metrics every second in
/// /tmp/svc), its log in /tmp/svc/log. `$o` is obscura, `$p` the service,
/// `said PATTERN` whether its log has it. Ready when the script goes on.
/// `tables`: more of the configuration (e.g. a [health] table).
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
        wait_for 120 "the service to be ready" said ready
        """
    }
}
