/// A board script's output read line by line: numbers the script echoed
/// after a prefix, and journal lines' CLOCK_MONOTONIC times.
public struct BoardLines {
    public let text: String
    public let lines: [String]

    public init(_ text: String) {
        self.text = text
        lines = text.split(separator: "\n").map(String.init)
    }

    /// The number after `prefix` on the first line that starts with it.
    public func number(after prefix: String) -> Double? {
        lines.first { $0.hasPrefix(prefix) }.flatMap { Double($0.dropFirst(prefix.count)) }
    }

    /// A journal line's CLOCK_MONOTONIC time ("[  12.345678] …", from
    /// `journalctl -o short-monotonic`), as /proc/uptime counts on the board.
    public static func monotonic(of line: String) -> Double? {
        guard let open = line.firstIndex(of: "["), let close = line.firstIndex(of: "]") else { return nil }
        return Double(line[line.index(after: open)..<close].trimmingCharacters(in: .whitespaces))
    }
}
