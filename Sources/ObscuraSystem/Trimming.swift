extension StringProtocol {
    /// The text without the spaces, tabs and line ends around it.
    public var trimmingWhitespace: String {
        let blank: (Character) -> Bool = { $0.isWhitespace || $0.isNewline }
        return String(String(self).drop(while: blank).reversed().drop(while: blank).reversed())
    }
}
