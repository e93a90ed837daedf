/// A camera's name in a kiosk of several (`[cameras.NAME]`): the letters it
/// may have (it goes into file names) and where its live view is served.
public enum CameraName {
    /// a-z, 0-9 and _, at most 32.
    public static func isValid(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 32 && name.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }
    }

    /// The camera's live socket: `live-NAME.sock` beside `liveSocket`.
    public static func liveSocket(_ name: String, beside liveSocket: String) -> String {
        liveSocket.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/") + "/live-\(name).sock"
    }
}
