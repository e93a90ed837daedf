import ArgumentParser

/// What the commands are called and say of themselves: one place for the
/// engine (`obscura-engine`: FFmpeg, libcamera, the service), which holds
/// them all, and the `obscura` front, which runs the light ones and lists
/// the others in its help.
public enum CommandDescriptions {
    public static let beep = CommandConfiguration(
        commandName: "beep",
        abstract: "Play timed beeps on an audio device, printing when each is heard (to check audio/video sync).",
        discussion: """
        Plays a short tone every --every seconds, silence between, and prints \
        "beep N at T" with T the moment its first sample is played, in \
        CLOCK_MONOTONIC nanoseconds — the clock of camera timestamps and of \
        `obscura record`'s "time zero". Each beep is dated twice, when queued \
        and once heard; when the two disagree (the player was kept from the CPU \
        between) it prints "beep N undated: " and why, instead. With the ALSA loopback \
        driver, play on hw:Loopback,0 and record from hw:Loopback,1.
        """)

    public static let collect = CommandConfiguration(
        commandName: "collect",
        abstract: "Collect a fleet of kiosks into an S3 bucket or a folder, verified end to end.",
        discussion: """
        Runs on the collector (never on a kiosk). Reads the fleet file (TOML: the \
        store, the kiosks and their SSH keys), pulls each kiosk's finished files \
        as `obscura pull` does (verified against the kiosk's .sha256, an \
        interrupted transfer resumed), several kiosks at once, and stores each \
        under KIOSK/YYYY/MM/DD/NAME with its sha256, which is then read back from \
        the store before the copy here is dropped. A file the store holds is \
        never fetched or stored again. Encrypted recordings are stored as they \
        are unless the kiosk says decrypt = true. Exit status 1 when a kiosk \
        could not be collected or a file failed (each is named); the next run \
        takes up what is left. With --every, runs again and again (a service); \
        otherwise once (a systemd timer: deploy/obscura-collect.timer).

        Example: obscura collect --fleet /etc/obscura/fleet.toml
        """)

    public static let config = CommandConfiguration(
        commandName: "config",
        abstract: "Show every key of the service's configuration, or check a configuration file.",
        discussion: """
        Without --check: each table and key of /etc/obscura/obscura.toml, with its type, \
        default, what is allowed and what it means (obscura.toml(5) says the same). \
        With --check: reads the file (default /etc/obscura/obscura.toml) and the board \
        profile it names as the service does, and says what is wrong, naming the line \
        and the key; then predicts what the configuration needs of the board (CPU \
        cores, the hardware encoder, buffer memory) against the profile's [budget], a \
        line per camera and a total. Exit status 1 when something is wrong, or when \
        the configuration is over the budget, saying what would fit.
        """)

    public static let dng = CommandConfiguration(
        commandName: "dng",
        abstract: "Capture one raw (Bayer) frame from a V4L2 node and write it as DNG.",
        discussion: """
        For sensors whose raw frames libcamera does not offer (vimc's \
        "Raw Capture 0"). The node's format must match its sensor's (set it \
        with media-ctl). Prints the size, pattern and file.
        """)

    public static let decode = CommandConfiguration(
        commandName: "decode",
        abstract: "Decode an elementary stream with the board's V4L2 hardware decoder.",
        discussion: """
        Reads an elementary stream (e.g. a .fwht recording made by the hardware \
        encoder on the virtual board) and writes the decoded frames one after \
        another as raw pixels (e.g. BGR888: bytes R, G, B). Prints the frame count.
        """)

    public static let devices = CommandConfiguration(
        commandName: "devices",
        abstract: "List cameras with their formats, sizes and frame-rate ranges, and audio capture devices.")

    public static let doctor = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check an installed kiosk: camera, encoder, storage, clock, retrieval, GPIO, the service and its last recording.",
        discussion: """
        One line a check, passed or failed; a failure names its fix. Exit status 1 when \
        a check failed. Run it as root (or as the obscura user) to see what the service sees.
        """)

    public static let gpio = CommandConfiguration(
        commandName: "gpio",
        abstract: "Watch or drive GPIO lines by chip label and line name.")

    public static let listen = CommandConfiguration(
        commandName: "listen",
        abstract: "Show a microphone's level (peak and RMS in dBFS), to check it hears something.",
        discussion: "Reads the device through an audio data output; one line per interval, a summary at the end.")

    public static let photo = CommandConfiguration(
        commandName: "photo",
        abstract: "Take a photo (JPEG with EXIF, and RAW as DNG) from the camera.",
        discussion: """
        The session runs, the photo is taken from the frame nearest the trigger \
        (zero shutter lag) after --warm-up seconds, and written to --output \
        (as <output>.partial first). Prints the size, shutter lag and file.
        """)

    public static let preview = CommandConfiguration(
        commandName: "preview",
        abstract: "Show the camera on a display through KMS (no desktop needed).",
        discussion: """
        Picks the first /dev/dri/card* with a connected display (or --device), \
        shows the camera for --duration seconds and prints how the frames got \
        there: zero-copy (the camera's buffer on a plane) or converted (counted \
        copies). --pattern shows an XRGB8888 test pattern from a second KMS \
        client's buffer instead of the camera: a display check with no camera. \
        --writeback saves what the display shows (read back through a \
        writeback connector, e.g. vkms's) as a PPM image.
        """)

    public static let record = CommandConfiguration(
        commandName: "record",
        abstract: "Record a clip from the camera into a movie file.",
        discussion: """
        The file is written as <output>.partial (fragmented every half second, or \
        --fragment seconds, each fragment synced to the storage as it completes, \
        so a killed process or a power cut leaves a playable file) and renamed when the recording \
        finishes. SIGINT or SIGTERM stops the recording and finalizes it. A \
        progress line goes to standard error (rewritten in place on a terminal); \
        a one-line summary to standard output at the end. With --pre-record N the \
        encoder runs from the start, the recording is triggered after \
        --trigger-after seconds (or by SIGUSR1), and the file begins with up to \
        N seconds from before the trigger (from the keyframe at or before it); \
        --duration counts from the trigger. --camera synthetic records a test pattern.
        """)

    public static let keys = CommandConfiguration(
        commandName: "keys",
        abstract: "Manage the keys that may fetch recordings (obscura-fetch) or watch the live view (obscura-view) over SSH.",
        discussion: """
        Retrieval keys live in /etc/obscura/fetch_authorized_keys: the account \
        is SFTP-only, chrooted to the recordings and photos, read-only unless \
        installed with --allow-delete (deploy/install). With --view, the keys \
        are the live view account's, in /etc/obscura/view_authorized_keys: \
        such a key runs `obscura view-serve` and nothing else (no files, no \
        shell, no forwarding), and the journal names its comment when it \
        watches. Each key is written with OpenSSH's `restrict` option.
        """)

    public static let pull = CommandConfiguration(
        commandName: "pull",
        abstract: "Fetch new finished recordings and photos from a device over SSH, verified.",
        discussion: """
        Runs on the computer that collects recordings. Uses OpenSSH's sftp as the \
        device's obscura-fetch account: fetches every finished file (one with a \
        .sha256 beside it) that is not here yet, resumes a transfer an earlier run \
        left, checks each file's SHA-256 before giving it its name here, and with \
        --delete removes on the device only files whose copy here was verified. \
        Partial transfers wait in DEST/.obscura-pull. Exit status 1 when a file \
        failed (it is named); files already here are skipped.

        With --identity-file (an age identity, age-keygen's key file), each \
        encrypted file (.age) is decrypted here once verified: x.mp4.age gives \
        x.mp4, and the encrypted copy stays beside it (its checksum is the \
        device's). The plaintext exists only here.

        Example: obscura pull --identity ~/.ssh/kiosk obscura-fetch@kiosk.local ~/Recordings
        """)

    public static let decrypt = CommandConfiguration(
        commandName: "decrypt",
        abstract: "Decrypt encrypted recordings and photos (.age) with an age identity.",
        discussion: """
        Runs on the computer that holds the identity (never on the device). \
        Each FILE.age gives FILE beside it, written under a temporary name and \
        named only when the decryption went through: a wrong identity or a \
        damaged file leaves no partial plaintext. A recording interrupted on the \
        device (killed, a power cut) ends without age's last chunk: its \
        complete chunks are decrypted and cut back to the end of the last whole \
        fragment (MP4, MOV) or cluster (MKV), so that no decoder meets a torn \
        tail; how much was cut is said. FILE.age.partial, as a killed recorder \
        left it, gives FILE.partial. `age -d -i KEY FILE.age > FILE` gives the \
        complete chunks uncut (a decoder may then report the torn last \
        fragment) and reports the missing end. Exit status 1 when a file was \
        not decrypted.

        Example: obscura decrypt --identity-file ~/.config/obscura/key.txt ~/Recordings/*.age
        """)

    public static let encrypt = CommandConfiguration(
        commandName: "encrypt",
        abstract: "Encrypt existing files to age recipients (FILE → FILE.age, beside it).",
        discussion: """
        For what was recorded before encryption was turned on, or files from \
        elsewhere: each FILE gives FILE.age (written under a temporary name, \
        named when whole); FILE itself is left as it is. `age -d` or \
        `obscura decrypt` gives it back.

        Example: obscura encrypt --recipients-file /etc/obscura/recipients.txt old.mp4
        """)

    public static let run = CommandConfiguration(
        commandName: "run",
        abstract: "Run the kiosk recorder service (buttons, LEDs, loop recording, control socket).",
        discussion: """
        Reads /etc/obscura/obscura.toml (or --config; the defaults without a file) \
        and the board profile it names. Under systemd it reports READY, STATUS and \
        watchdog keep-alives. SIGTERM or SIGINT finalizes a recording in progress \
        and exits; SIGUSR1 starts or stops recording.
        """)

    public static let stream = CommandConfiguration(
        commandName: "stream",
        abstract: "Run a capture session and print each frame and every session event.",
        discussion: """
        A check of the camera path: prints one line per frame (sequence, sensor \
        timestamp, metadata) and the session's events (start, stop, interruptions, \
        recovery). Ends after --frames frames or --duration seconds, then prints \
        how many frames were delivered and how many are still held (0: every \
        frame went back to the camera).

        --hold-across-reconfiguration N keeps N frames while the running session \
        is reconfigured twice (an output added, then the preset changed), and \
        checks that their pixels did not change.
        """)

    public static let timeCodes = CommandConfiguration(
        commandName: "time-codes",
        abstract: "Print the time codes of decoded frames on standard input (8-bit luma), with when each was read.",
        discussion: """
        Each line: the frame's camera time (microseconds, from the code in its \
        picture) and when it was read here (CLOCK_MONOTONIC nanoseconds). \
        Frames without a code print nothing. On the machine that stamped the \
        frames, the difference is capture to decoded.
        """,
        shouldDisplay: false)

    public static let viewServe = CommandConfiguration(
        commandName: "view-serve",
        abstract: "Send the kiosk's live view to standard output (what the SSH server runs for a view key).",
        discussion: """
        Connects to the recorder's live socket, says who watches (--name, for \
        the journal) and copies the stream to standard output until the viewer \
        goes. It reads nothing from standard input. `obscura view` on another \
        computer starts it through SSH and shows what it sends.
        """)

    public static let view = CommandConfiguration(
        commandName: "view",
        abstract: "Watch a kiosk's camera live, over SSH.",
        discussion: """
        Runs `ssh KIOSK obscura view-serve` (a view key runs only that, whatever \
        is asked) and plays what comes in ffplay or mpv, whichever is installed. \
        The kiosk opens no port of its own: the picture comes through its SSH \
        server. While the kiosk records, the view is the recording's own \
        stream; while it is idle, the kiosk encodes for its viewers and stops \
        when the last one leaves.
        """)

    public static let watch = CommandConfiguration(
        commandName: "watch",
        abstract: "Watch a camera's picture for darkness, no detail (covered) and freezing, as the service does.",
        discussion: """
        Looks at up to --rate frames a second, each through a grid of 32 × 18 \
        points of its luma (never a copy of the frame), and prints a line when a \
        condition is declared (it held for --hold seconds) or cleared (gone for \
        --clear-after seconds); with --measures, the grid's mean, spread and detail \
        once a second, to choose thresholds for a place. Ends after --seconds \
        with the CPU time per frame looked at.

        A file camera (file:PATH) is watched once, every frame in order at its \
        own time (the file's frame rate, from its first frame: 0 s): it ends \
        with the file, or with --loop after --seconds of the file's time.
        """)
}

extension CommandConfiguration {
    /// This configuration with its subcommands (those the engine holds).
    public func with(subcommands: [any ParsableCommand.Type]) -> CommandConfiguration {
        var configuration = self
        configuration.subcommands = subcommands
        return configuration
    }
}
