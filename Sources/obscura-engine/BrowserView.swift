import Foundation
import ObscuraRecording
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// `obscura view --browser`: the live view in a web page served on this
/// computer's 127.0.0.1 only. The page fetches `/stream` (the live view's
/// packets, each with its 21-byte header, as the kiosk sends them) and
/// decodes them with the browser's WebCodecs `VideoDecoder` into a canvas;
/// it tells `/report` when it shows the picture, or why it cannot.
///
/// One page watches at a time: a new `/stream` replaces the one before, and
/// starts at the next key frame. Requests whose Host is not this address
/// are refused (a web page elsewhere cannot reach it by DNS rebinding).
/// The accepting thread is joined by `close()`; a stalled page holds up
/// `send`, and so this viewer, never the kiosk (its queue skips ahead).
final class BrowserView: Sendable {
    let port: UInt16
    private let listener: OwnedFileDescriptor
    private let wakeup: Wakeup
    private let thread: JoinableThread
    private let page: Mutex<Page?>
    /// Where to say what the page reported.
    typealias Say = @Sendable (String) -> Void

    /// The page's stream: its connection, and whether it has had a key frame.
    final class Page: Sendable {
        let connection: OwnedFileDescriptor
        let started = Mutex(false)
        init(_ connection: OwnedFileDescriptor) { self.connection = connection }
    }

    init(port requested: UInt16, title: String, say: @escaping Say) throws {
        let listener = try Syscalls.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), what: "AF_INET")
        try Syscalls.reuseAddress(listener.rawValue, what: "the browser view's listener")
        port = try Syscalls.bindLoopback(listener.rawValue, port: requested)
        try Syscalls.listen(listener.rawValue, backlog: 16, what: "127.0.0.1:\(port)")
        let wakeup = try Wakeup()
        let page = Mutex<Page?>(nil)
        let html = Array(Self.html(title: title).utf8)
        let port = port
        self.listener = listener
        self.wakeup = wakeup
        self.page = page
        thread = try JoinableThread(name: "obscura-browser") {
            Self.accept(listener, wakeup, port: port, html: html, page: page, say: say)
        }
    }

    /// Sends a packet to the page, if one watches (from its first key
    /// frame on). A page that went away is let go.
    func send(_ packet: LivePacket) {
        guard let current = page.withLock({ $0 }) else { return }
        let start = current.started.withLock { started in
            if !started && packet.isKeyframe { started = true }
            return started
        }
        guard start else { return }
        do {
            try Syscalls.sendAll(current.connection.rawValue, LiveStream.frameHeader(packet) + packet.data,
                                 flags: Int32(MSG_NOSIGNAL), what: "the browser")
        } catch {
            page.withLock { if $0 === current { $0 = nil } }
        }
    }

    /// Stops serving: the accepting thread ends and is joined, the page's
    /// stream is closed.
    func close() {
        wakeup.signal()
        thread.join()
        page.withLock { $0 = nil }
    }

    deinit { close() }

    private static func accept(_ listener: OwnedFileDescriptor, _ wakeup: Wakeup, port: UInt16, html: [UInt8],
                               page: Mutex<Page?>, say: Say) {
        while true {
            let readable = (try? wakeup.wait(for: listener.rawValue, timeout: nil)) ?? false
            if wakeup.isSignalled { return }
            guard readable else { continue }
            while true {
                let fd = acceptConnection(listener.rawValue)
                if fd < 0 { break }
                let connection = OwnedFileDescriptor(adopting: fd)
                guard let request = try? readRequest(connection.rawValue) else { continue }
                respond(to: request, on: connection, port: port, html: html, page: page, say: say)
            }
        }
    }

    /// A request's target and Host, read within two seconds.
    struct Request {
        var method = "", target = "", host = ""
    }

    static func readRequest(_ fd: Int32) throws -> Request? {
        var bytes: [UInt8] = []
        let deadline = ContinuousClock.now + .seconds(2)
        while !bytes.suffix(4).elementsEqual([13, 10, 13, 10]) {
            guard bytes.count < 16_384, ContinuousClock.now < deadline else { return nil }
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
            guard try Syscalls.poll(&fds, milliseconds: 200, what: "the browser") > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = try chunk.withUnsafeMutableBytes { b throws(SystemError) in try Syscalls.receive(fd, into: b, flags: 0, what: "the browser") }
            if n == 0 { return nil }
            bytes += chunk[0..<n]
        }
        let lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
        let first = lines[0].split(separator: " ")
        guard first.count == 3 else { return nil }
        var request = Request(method: String(first[0]), target: String(first[1]))
        for line in lines.dropFirst() where line.lowercased().hasPrefix("host:") {
            request.host = line.dropFirst(5).trimmingCharacters(in: .whitespaces)
        }
        return request
    }

    private static func respond(to request: Request, on connection: OwnedFileDescriptor, port: UInt16, html: [UInt8],
                                page: Mutex<Page?>, say: Say) {
        func reply(_ status: String, _ type: String, _ body: [UInt8]) {
            let head = "HTTP/1.1 \(status)\r\nContent-Type: \(type)\r\nContent-Length: \(body.count)\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
            try? Syscalls.setBlocking(connection.rawValue, true, what: "the browser")
            try? Syscalls.sendAll(connection.rawValue, Array(head.utf8) + body, flags: Int32(MSG_NOSIGNAL), what: "the browser")
        }
        guard ["127.0.0.1:\(port)", "localhost:\(port)"].contains(request.host) else {
            return reply("403 Forbidden", "text/plain", Array("only http://127.0.0.1:\(port)/ serves the live view\n".utf8))
        }
        guard request.method == "GET" else { return reply("405 Method Not Allowed", "text/plain", Array("GET only\n".utf8)) }
        let path = request.target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
        switch path {
        case "/":
            reply("200 OK", "text/html; charset=utf-8", html)
        case "/stream":
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
            guard (try? Syscalls.setBlocking(connection.rawValue, true, what: "the browser")) != nil,
                  (try? Syscalls.sendAll(connection.rawValue, Array(head.utf8), flags: Int32(MSG_NOSIGNAL), what: "the browser")) != nil,
                  let kept = try? Syscalls.duplicate(connection.rawValue) else { return }
            page.withLock { $0 = Page(kept) }
        case "/report":
            let query = request.target.split(separator: "?", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
            let said = query.split(separator: "&").map { ($0.removingPercentEncoding ?? String($0)).replacingOccurrences(of: "+", with: " ") }
            say("browser: " + said.joined(separator: " ").prefix(300))
            reply("204 No Content", "text/plain", [])
        default:
            reply("404 Not Found", "text/plain", Array("no such page\n".utf8))
        }
    }

    /// The page: WebCodecs' VideoDecoder into a canvas, its codec from the
    /// first key frame's SPS.
    static func html(title: String) -> String {
        let escaped = title.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        return """
        <!doctype html>
        <html><head><meta charset="utf-8"><title>Obscura live: \(escaped)</title>
        <style>body{margin:0;background:#111;color:#ccc;font:14px sans-serif}
        #s{padding:.3em .6em}canvas{display:block;margin:auto;max-width:100vw;max-height:calc(100vh - 2em)}</style></head>
        <body><div id="s">connecting…</div><canvas id="v"></canvas><script>
        const status = document.getElementById('s'), canvas = document.getElementById('v'), ctx = canvas.getContext('2d');
        let decoder = null, decoded = 0;
        function report(query) { fetch('/report?' + query, {cache: 'no-store'}).catch(() => {}); }
        function fail(why) { status.textContent = why; report('error=' + encodeURIComponent(why)); }
        function codecOf(data) {
          for (let i = 0; i + 6 < data.length; i++)
            if (data[i] == 0 && data[i + 1] == 0 && data[i + 2] == 1 && (data[i + 3] & 0x1f) == 7)
              return 'avc1.' + [data[i + 4], data[i + 5], data[i + 6]].map(b => b.toString(16).padStart(2, '0')).join('');
          return null;
        }
        function show(frame) {
          if (canvas.width != frame.displayWidth) { canvas.width = frame.displayWidth; canvas.height = frame.displayHeight; }
          ctx.drawImage(frame, 0, 0);
          frame.close();
          decoded++;
          status.textContent = 'live: ' + canvas.width + 'x' + canvas.height + ', ' + decoded + ' frames';
          if (decoded == 10) {
            const pixels = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
            let sum = 0, n = 0;
            for (let i = 0; i < pixels.length; i += 4 * 97) { sum += (pixels[i] + pixels[i + 1] + pixels[i + 2]) / 3; n++; }
            report('decoded=10&width=' + canvas.width + '&height=' + canvas.height + '&mean=' + Math.round(sum / n));
          }
        }
        async function run() {
          if (!('VideoDecoder' in window)) return fail('this browser has no WebCodecs VideoDecoder');
          const response = await fetch('/stream', {cache: 'no-store'});
          if (!response.ok) return fail('the stream: HTTP ' + response.status);
          const reader = response.body.getReader();
          let buffer = new Uint8Array(0);
          for (;;) {
            const {value, done} = await reader.read();
            if (done) return fail('the live view ended');
            const joined = new Uint8Array(buffer.length + value.length);
            joined.set(buffer); joined.set(value, buffer.length); buffer = joined;
            while (buffer.length >= 21) {
              const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.length);
              const length = view.getUint32(0), time = view.getBigUint64(4), key = (buffer[20] & 1) == 1;
              if (buffer.length < 21 + length) break;
              const data = buffer.slice(21, 21 + length);
              buffer = buffer.slice(21 + length);
              if (!decoder) {
                const codec = codecOf(data);
                if (!codec) return fail('the first key frame has no H.264 SPS (the kiosk records another codec?)');
                decoder = new VideoDecoder({output: show, error: e => fail('decoding: ' + e.message)});
                decoder.configure({codec: codec, optimizeForLatency: true});
              }
              decoder.decode(new EncodedVideoChunk({type: key ? 'key' : 'delta', timestamp: Number(time / 1000n), data: data}));
            }
          }
        }
        run().catch(e => fail(String(e)));
        </script></body></html>
        """
    }
}
