/// A path's parts, as the shell's basename and dirname and NSString's
/// path methods give them, for the modules that stay free of Foundation.
public enum Paths {
    /// "/a/b/c.mp4" → "c.mp4"; a path without "/" is its own name.
    public static func name(_ path: String) -> String {
        let trimmed = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        guard let slash = trimmed.lastIndex(of: "/") else { return trimmed }
        return String(trimmed[trimmed.index(after: slash)...])
    }

    /// "/a/b/c.mp4" → "/a/b"; "c.mp4" → ""; "/c" → "/".
    public static func folder(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// "c.mp4" → "mp4"; "c" and ".hidden" → "".
    public static func fileExtension(_ path: String) -> String {
        let name = name(path)
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return String(name[name.index(after: dot)...])
    }
}
