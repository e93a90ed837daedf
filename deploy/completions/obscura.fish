function __obscura_should_offer_completions_for_flags_or_options -a expected_commands
    set -l non_repeating_flags_or_options $argv[2..]
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __obscura_parse_tokens
    test "$commands" = "$expected_commands"; and return $non_repeating_flags_or_options_absent
end

function __obscura_should_offer_completions_for_positional -a expected_commands positional_index_comparison expected_positional_index
    set -l non_repeating_flags_or_options
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __obscura_parse_tokens
    test "$commands" = "$expected_commands" -a \( "$positional_index" "$positional_index_comparison" "$expected_positional_index" \)
end

function __obscura_parse_tokens -S
    set -l unparsed_tokens (__obscura_tokens -pc)
    switch $unparsed_tokens[1]
    case 'obscura'
        __obscura_parse_subcommand 0 'h/help'
        switch $unparsed_tokens[1]
        case 'devices'
            __obscura_parse_subcommand 0 'controls' 'h/help'
        case 'record'
            __obscura_parse_subcommand 0 'duration=' 'output=' 'recipient=+' 'recipients-file=' 'align-to-age-chunks' 'timestamps=' 'overlay' 'overlay-text=' 'overlay-position=' 'overlay-size=' 'overlay-colour=' 'overlay-background=' 'overlay-font=' 'overlay-on-preview' 'container=' 'camera=' 'size=' 'pixel-format=' 'codec=' 'bit-rate=' 'preset=' 'threads=' 'frame-rate=' 'keyframe-interval=' 'fragment=' 'max-size=' 'segment=' 'min-free-space=' 'pre-record=' 'trigger-after=' 'pre-record-bytes=' 'preview' 'encoder=' 'save-frame=' 'through=' 'audio=' 'audio-codec=' 'audio-rate=' 'audio-channels=' 'audio-bit-rate=' 'h/help'
        case 'stream'
            __obscura_parse_subcommand 0 'camera=' 'size=' 'preset=' 'frames=' 'duration=' 'set=+' 'metadata' 'quiet' 'stats' 'raw-output=' 'hold-across-reconfiguration=' 'h/help'
        case 'gpio'
            __obscura_parse_subcommand 0 'h/help'
            switch $unparsed_tokens[1]
            case 'watch'
                __obscura_parse_subcommand 0 'chip=' 'line=' 'count=' 'timeout=' 'bias=' 'h/help'
            case 'set'
                __obscura_parse_subcommand 1 'chip=' 'line=' 'hold=' 'h/help'
            case 'button'
                __obscura_parse_subcommand 0 'chip=' 'line=' 'count=' 'timeout=' 'debounce=' 'long-press=' 'active-low' 'h/help'
            end
        case 'run'
            __obscura_parse_subcommand 0 'config=' 'board=' 'h/help'
        case 'status'
            __obscura_parse_subcommand 0 'socket=' 'config=' 'json' 'h/help'
        case 'ctl'
            __obscura_parse_subcommand -r 1 'socket=' 'config=' 'h/help'
        case 'config'
            __obscura_parse_subcommand 1 'format=' 'date=' 'check' 'h/help'
        case 'doctor'
            __obscura_parse_subcommand 0 'config=' 'json' 'h/help'
        case 'photo'
            __obscura_parse_subcommand 0 'output=' 'recipient=+' 'recipients-file=' 'overlay' 'overlay-text=' 'camera=' 'size=' 'pixel-format=' 'quality=' 'thumbnail=' 'warm-up=' 'bracket-ev=' 'bracket-manual=' 'raw' 'raw-only' 'h/help'
        case 'dng'
            __obscura_parse_subcommand 0 'node=' 'pattern=' 'bits=' 'size=' 'output=' 'no-preview' 'h/help'
        case 'preview'
            __obscura_parse_subcommand 0 'camera=' 'size=' 'pixel-format=' 'duration=' 'device=' 'connector=' 'plane=' 'gravity=' 'rotation=' 'destination=' 'background=' 'pattern' 'pattern-size=' 'writeback=' 'save-frame=' 'list' 'overlay' 'overlay-text=' 'h/help'
        case 'decode'
            __obscura_parse_subcommand 0 'input=' 'codec=' 'size=' 'pixel-format=' 'output=' 'h/help'
        case 'keys'
            __obscura_parse_subcommand 0 'h/help'
            switch $unparsed_tokens[1]
            case 'add'
                __obscura_parse_subcommand 1 'view' 'file=' 'h/help'
            case 'list'
                __obscura_parse_subcommand 0 'view' 'file=' 'h/help'
            case 'remove'
                __obscura_parse_subcommand 1 'view' 'file=' 'h/help'
            end
        case 'pull'
            __obscura_parse_subcommand 2 'p/port=' 'i/identity=' 'known-hosts=' 'accept-new-host-key' 'ssh-option=+' 'limit-kbps=' 'delete' 'remote-folder=+' 'identity-file=' 'h/help'
        case 'collect'
            __obscura_parse_subcommand 0 'fleet=' 'kiosk=+' 'every=' 'h/help'
        case 'view'
            __obscura_parse_subcommand 1 'local=' 'player=' 'output=' 'i=' 'port=' 'known-hosts=' 'seconds=' 'timings=' 'browser' 'browser-port=' 'h/help'
        case 'view-serve'
            __obscura_parse_subcommand 0 'name=' 'socket=' 'ssh-forced' 'h/help'
        case 'encrypt'
            __obscura_parse_subcommand -r 1 'recipient=+' 'recipients-file=' 'h/help'
        case 'decrypt'
            __obscura_parse_subcommand -r 1 'identity-file=' 'h/help'
        case 'beep'
            __obscura_parse_subcommand 0 'device=' 'every=' 'count=' 'lead=' 'frequency=' 'length=' 'rate=' 'level=' 'h/help'
        case 'listen'
            __obscura_parse_subcommand 0 'device=' 'seconds=' 'interval=' 'rate=' 'channels=' 'h/help'
        case 'watch'
            __obscura_parse_subcommand 0 'camera=' 'size=' 'pixel-format=' 'seconds=' 'dark-luma=' 'flat-detail=' 'hold=' 'clear-after=' 'rate=' 'conditions=' 'measures' 'loop' 'h/help'
        case 'help'
            __obscura_parse_subcommand -r 1 
        end
    end
end

function __obscura_tokens
    if test (string split -m 1 -f 1 -- . "$FISH_VERSION") -gt 3
        commandline --tokens-raw $argv
    else
        commandline -o $argv
    end
end

function __obscura_parse_subcommand -S -a positional_count
    argparse -s r -- $argv
    set -l option_specs $argv[2..]
    set -l is_repeating_positional $_flag_r
    set -el _flag_r
    set -a commands $unparsed_tokens[1]
    set positional_index 0
    while true
        set -e unparsed_tokens[1]
        argparse -sn "$commands" $option_specs -- $unparsed_tokens 2> /dev/null
        set unparsed_tokens $argv
        set positional_index (math $positional_index + 1)
        for non_repeating_flag_or_option in $non_repeating_flags_or_options
            if set -ql "_flag_$(string replace -a - _ -- $non_repeating_flag_or_option)"
                set non_repeating_flags_or_options_absent 1
                break
            end
        end
        test (count $unparsed_tokens) -eq 0 -o \( -z "$is_repeating_positional" -a "$positional_index" -gt "$positional_count" \) && break
    end
end

function __obscura_complete_directories
    set -l token (commandline -t)
    string match -- '*/' $token
    set -l subdirs $token*/
    printf %s\n $subdirs
end

function __obscura_custom_completion
    set -x SAP_SHELL fish
    set -x SAP_SHELL_VERSION $FISH_VERSION
    set -l tokens (__obscura_tokens -p)
    if test -z "$(__obscura_tokens -t)"
        set -l index (count (__obscura_tokens -pc))
        set tokens $tokens[..$index] \'\' $tokens[(math $index + 1)..]
    end
    command $tokens[1] $argv $tokens
end

complete -c 'obscura' -f
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'devices' -d 'List cameras with their formats, sizes and frame-rate ranges, and audio capture devices.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'record' -d 'Record a clip from the camera into a movie file.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'stream' -d 'Run a capture session and print each frame and every session event.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'gpio' -d 'Watch or drive GPIO lines by chip label and line name.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'run' -d 'Run the kiosk recorder service (buttons, LEDs, loop recording, control socket).'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'status' -d 'Show what the recorder service is doing.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'ctl' -d 'Control the recorder service: record start|stop|toggle, photo, flash auto|on|off.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'config' -d 'Show every key of the service\'s configuration, or check a configuration file.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'doctor' -d 'Check an installed kiosk: camera, encoder, storage, clock, retrieval, GPIO, the service and its last recording.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'photo' -d 'Take a photo (JPEG with EXIF, and RAW as DNG) from the camera.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'dng' -d 'Capture one raw (Bayer) frame from a V4L2 node and write it as DNG.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'preview' -d 'Show the camera on a display through KMS (no desktop needed).'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'decode' -d 'Decode an elementary stream with the board\'s V4L2 hardware decoder.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'keys' -d 'Manage the keys that may fetch recordings (obscura-fetch) or watch the live view (obscura-view) over SSH.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'pull' -d 'Fetch new finished recordings and photos from a device over SSH, verified.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'collect' -d 'Collect a fleet of kiosks into an S3 bucket or a folder, verified end to end.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'view' -d 'Watch a kiosk\'s camera live, over SSH.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'view-serve' -d 'Send the kiosk\'s live view to standard output (what the SSH server runs for a view key).'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'encrypt' -d 'Encrypt existing files to age recipients (FILE → FILE.age, beside it).'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'decrypt' -d 'Decrypt encrypted recordings and photos (.age) with an age identity.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'beep' -d 'Play timed beeps on an audio device, printing when each is heard (to check audio/video sync).'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'listen' -d 'Show a microphone\'s level (peak and RMS in dBFS), to check it hears something.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'watch' -d 'Watch a camera\'s picture for darkness, no detail (covered) and freezing, as the service does.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura devices" controls' -l 'controls' -d 'Also list the controls each camera offers.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura devices" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" duration' -l 'duration' -d 'Seconds to record (by the camera\'s timestamps).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" output' -l 'output' -d 'Output file (.mp4, .mov or .mkv; encrypted: .mp4.age, …).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record"' -l 'recipient' -d 'Encrypt the file as it is written to this age recipient (age1…, age-keygen\'s public key); repeatable. The output\'s name ends in .age.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" recipients-file' -l 'recipients-file' -d 'Encrypt to the age recipients in this file (one age1… per line, as `age -R` reads it).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" align-to-age-chunks' -l 'align-to-age-chunks' -d 'Encrypted: end each fragment (MKV: cluster) on one of age\'s 64 KiB chunks, with filler between, so that `age -d` of a killed recording gives whole fragments (unless the kill cut the write of one). Costs filler (see BENCHMARKS.md).'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" timestamps' -l 'timestamps' -d 'Write each frame\'s time (milliseconds from the first, in stored order) to this .txt file, in mkvmerge\'s timestamp format v2: what an elementary stream needs to be muxed later.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" overlay' -l 'overlay' -d 'Burn a caption into the frames: the date and time of each frame (its sensor timestamp on the wall clock) and the camera\'s name.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" overlay-text' -l 'overlay-text' -d 'With --overlay: a text of one\'s own on the caption\'s second line.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" overlay-position' -l 'overlay-position' -d 'With --overlay: top-left (the default), top-right, bottom-left or bottom-right.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" overlay-size' -l 'overlay-size' -d 'With --overlay: the text\'s height in pixels; default a 24th of the frame\'s height.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" overlay-colour' -l 'overlay-colour' -d 'With --overlay: the text\'s colour, #rrggbb or white (the default), black, yellow, red, green, blue.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" overlay-background' -l 'overlay-background' -d 'With --overlay: box (an opaque box behind the text, the default) or outline (a dark edge around each glyph).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" overlay-font' -l 'overlay-font' -d 'With --overlay: a TrueType font file (default /usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" overlay-on-preview' -l 'overlay-on-preview' -d 'With --overlay and --preview: the preview shows the caption too.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" container' -l 'container' -d 'Container: mp4, mov or mkv; default: from the output\'s extension.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" camera' -l 'camera' -d 'Camera id (see `obscura devices`), or synthetic; default: the first camera.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" size' -l 'size' -d 'Frame size, e.g. 1280x720; default: the camera\'s for the preset.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" pixel-format' -l 'pixel-format' -d 'Camera pixel format, by name or fourcc, e.g. NV12 or BGR888 (BG24); default: NV12 when offered.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" codec' -l 'codec' -d 'Codec: h264, hevc, prores422, mjpeg.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" bit-rate' -l 'bit-rate' -d 'Average bit rate in bits per second; default: the encoder\'s quality default.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" preset' -l 'preset' -d 'Encoder preset (x264/x265).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" threads' -l 'threads' -d 'Encoder threads; 0: the encoder decides.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" frame-rate' -l 'frame-rate' -d 'Frame rate: the camera is set to it when it has a frame-rate control (refused outside the format\'s range), and the encoder plans for it. Default: the camera\'s own rate (30 when it does not say).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" keyframe-interval' -l 'keyframe-interval' -d 'Most frames from one keyframe to the next; default: one second of frames.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" fragment' -l 'fragment' -d 'Seconds per fragment (MKV: per cluster), each synced to the storage when complete: shorter loses less at a power cut and writes the storage more often.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" max-size' -l 'max-size' -d 'Stop when the file reaches this many bytes.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" segment' -l 'segment' -d 'Start a new file every this many seconds, at a keyframe (clip-0001.mp4, …).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" min-free-space' -l 'min-free-space' -d 'Stop when the disk has less free space than this many bytes.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" pre-record' -l 'pre-record' -d 'Seconds of video before the trigger to keep (encoded, in memory).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" trigger-after' -l 'trigger-after' -d 'With --pre-record: seconds from start to the trigger (default: the pre-record time); SIGUSR1 triggers earlier.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" pre-record-bytes' -l 'pre-record-bytes' -d 'With --pre-record: memory for the buffer, in bytes.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" preview' -l 'preview' -d 'Show the camera on a display through KMS while recording (headless when there is none).'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" encoder' -l 'encoder' -d 'Encoder: auto (a V4L2 hardware encoder, else libavcodec), v4l2m2m (hardware only) or software.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" save-frame' -l 'save-frame' -d 'Save the first frame as PPM (to compare with what was recorded).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" through' -l 'through' -d 'What records: movie-output, or asset-writer (a video data output\'s frames appended to an asset writer: the same encoders and files, no sound, segments or pre-record).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" audio' -l 'audio' -d 'Audio: an ALSA capture device (see `obscura devices`), auto (the first) or none. Without a usable device the recording is video only.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" audio-codec' -l 'audio-codec' -d 'Audio codec: aac (mp4, mov, mkv) or opus (mkv).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" audio-rate' -l 'audio-rate' -d 'Audio sample rate in Hz.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" audio-channels' -l 'audio-channels' -d 'Audio channels.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" audio-bit-rate' -l 'audio-bit-rate' -d 'Audio bit rate in bits per second.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura record" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura stream" camera' -l 'camera' -d 'Camera id; default: the first camera.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura stream" size' -l 'size' -d 'Frame size, e.g. 1280x720; default: the camera\'s for the preset.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura stream" preset' -l 'preset' -d 'Preset: high, photo, hd1920x1080, hd1280x720, vga640x480.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura stream" frames' -l 'frames' -d 'Stop after this many frames.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura stream" duration' -l 'duration' -d 'Stop after this many seconds.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura stream"' -l 'set' -d 'Controls to set, NAME=VALUE (Brightness, Contrast, Saturation, ExposureValue, …).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura stream" metadata' -l 'metadata' -d 'Print every metadata entry of each frame.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura stream" quiet' -l 'quiet' -d 'Print nothing per frame (events and the summary only).'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura stream" stats' -l 'stats' -d 'Print the mean sample value of each frame\'s first plane.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura stream" raw-output' -l 'raw-output' -d 'Write each frame\'s pixels (NV12 or YUV 4:2:0, rows packed) to FILE (.yuv, .nv12 or .raw), - for standard output (the lines then go to standard error): a pipe into another program, e.g. ffmpeg -f rawvideo -pix_fmt nv12.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura stream" hold-across-reconfiguration' -l 'hold-across-reconfiguration' -d 'Hold this many frames across two reconfigurations while running and check their pixels.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura stream" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura gpio" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura gpio" -eq 1' -fa 'watch' -d 'Print edges on an input line.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura gpio" -eq 1' -fa 'set' -d 'Drive an output line, hold it, then release it.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura gpio" -eq 1' -fa 'button' -d 'Print debounced presses of a button (short and long).'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura gpio watch" chip' -l 'chip' -d 'The chip\'s label (or gpiochipN name).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura gpio watch" line' -l 'line' -d 'The line\'s name.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura gpio watch" count' -l 'count' -d 'Stop after this many edges.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura gpio watch" timeout' -l 'timeout' -d 'Give up after this many seconds.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura gpio watch" bias' -l 'bias' -d 'Bias: as-is, disabled, pull-up, pull-down.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura gpio watch" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura gpio set" chip' -l 'chip' -d 'The chip\'s label (or gpiochipN name).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura gpio set" line' -l 'line' -d 'The line\'s name.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura gpio set" hold' -l 'hold' -d 'Seconds to hold the value before releasing the line.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura gpio set" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura gpio button" chip' -l 'chip' -d 'The chip\'s label (or gpiochipN name).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura gpio button" line' -l 'line' -d 'The line\'s name.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura gpio button" count' -l 'count' -d 'Stop after this many presses.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura gpio button" timeout' -l 'timeout' -d 'Give up after this many seconds.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura gpio button" debounce' -l 'debounce' -d 'Debounce period in milliseconds.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura gpio button" long-press' -l 'long-press' -d 'Hold time of a long press, in milliseconds.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura gpio button" active-low' -l 'active-low' -d 'The button pulls the line low when pressed.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura gpio button" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura run" config' -l 'config' -d 'Configuration file (default /etc/obscura/obscura.toml when it exists).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura run" board' -l 'board' -d 'Board profile name or path, overriding the configuration\'s.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura run" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura status" socket' -l 'socket' -d 'Control socket (default: the configuration\'s, /run/obscura/control.sock).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura status" config' -l 'config' -d 'Configuration file naming the socket.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura status" json' -l 'json' -d 'Print the raw JSON.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura status" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura ctl" socket' -l 'socket' -d 'Control socket (default: the configuration\'s, /run/obscura/control.sock).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura ctl" config' -l 'config' -d 'Configuration file naming the socket.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura ctl" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura config" format' -l 'format' -d 'How the reference is written: text, markdown (docs/configuration.md) or man (obscura.toml(5)).' -rfka 'text markdown man'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura config" date' -l 'date' -d 'The manual page\'s date (YYYY-MM-DD), with --format man (default: today).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura config" check' -l 'check' -d 'Check a configuration file instead.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura config" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura doctor" config' -l 'config' -d 'Configuration file (default /etc/obscura/obscura.toml when it exists).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura doctor" json' -l 'json' -d 'Write the checks as JSON.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura doctor" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura photo" output' -l 'output' -d 'Output file (.jpg; encrypted: .jpg.age).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura photo"' -l 'recipient' -d 'Encrypt each photo to this age recipient (age1…, age-keygen\'s public key) before it is written; repeatable. The output\'s name ends in .age.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura photo" recipients-file' -l 'recipients-file' -d 'Encrypt to the age recipients in this file (one age1… per line, as `age -R` reads it).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura photo" overlay' -l 'overlay' -d 'Burn a caption into the JPEG: its frame\'s date and time and the camera\'s name, as recordings get it.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura photo" overlay-text' -l 'overlay-text' -d 'With --overlay: a text of one\'s own on the caption\'s second line.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura photo" camera' -l 'camera' -d 'Camera id (see `obscura devices`), or synthetic.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura photo" size' -l 'size' -d 'Frame size, e.g. 1280x720.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura photo" pixel-format' -l 'pixel-format' -d 'Camera pixel format, by name or fourcc, e.g. NV12 or BGR888 (BG24).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura photo" quality' -l 'quality' -d 'JPEG quality, 1–100.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura photo" thumbnail' -l 'thumbnail' -d 'Embedded thumbnail size, e.g. 160x120; none without.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura photo" warm-up' -l 'warm-up' -d 'Seconds the camera runs before the photo (exposure settles).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura photo" bracket-ev' -l 'bracket-ev' -d 'An exposure-bias bracket in EV, e.g. -2,0,2 (files NAME-1.jpg, NAME-2.jpg, …).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura photo" bracket-manual' -l 'bracket-manual' -d 'A manual bracket of milliseconds:ISO shots, e.g. 5:100,10:200,20:400.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura photo" raw' -l 'raw' -d 'Also a RAW photo (DNG, same name) from the camera\'s raw stream.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura photo" raw-only' -l 'raw-only' -d 'Only the RAW photo, no JPEG (implies --raw).'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura photo" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura dng" node' -l 'node' -d 'The V4L2 node\'s name, e.g. "Raw Capture 0".' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura dng" pattern' -l 'pattern' -d 'Bayer pattern: RGGB, GRBG, GBRG, BGGR.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura dng" bits' -l 'bits' -d 'Bits per sample: 8 or 10.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura dng" size' -l 'size' -d 'Frame size, e.g. 640x480.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura dng" output' -l 'output' -d 'Output file (.dng).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura dng" no-preview' -l 'no-preview' -d 'Leave out the RGB preview.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura dng" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura preview" camera' -l 'camera' -d 'Camera id (see `obscura devices`), or synthetic.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura preview" size' -l 'size' -d 'Frame size, e.g. 640x480.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura preview" pixel-format' -l 'pixel-format' -d 'Camera pixel format, by name or fourcc, e.g. NV12 or BGR888 (BG24).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura preview" duration' -l 'duration' -d 'Seconds to show (SIGINT or SIGTERM ends it sooner).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura preview" device' -l 'device' -d 'DRM device, e.g. /dev/dri/card1 (default: the first with a display).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura preview" connector' -l 'connector' -d 'Connector to prefer, e.g. HDMI-A-1 (default: the first connected).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura preview" plane' -l 'plane' -d 'Plane for the frames: overlay (over the background) or primary.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura preview" gravity' -l 'gravity' -d 'fit (letterbox), fill (crop) or stretch.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura preview" rotation' -l 'rotation' -d 'Clockwise rotation: 0, 90, 180 or 270.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura preview" destination' -l 'destination' -d 'Where on the screen, WIDTHxHEIGHT+X+Y (default: all of it).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura preview" background' -l 'background' -d 'Background colour around the frame, RRGGBB.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura preview" pattern' -l 'pattern' -d 'A test pattern from another KMS client\'s XRGB8888 buffer instead of the camera.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura preview" pattern-size' -l 'pattern-size' -d 'Pattern size, WIDTHxHEIGHT.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura preview" writeback' -l 'writeback' -d 'Save the screen, read back through the writeback connector, as PPM.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura preview" save-frame' -l 'save-frame' -d 'Save one camera frame (what the preview shows) as PPM.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura preview" list' -l 'list' -d 'List the KMS devices, connectors and planes, and exit.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura preview" overlay' -l 'overlay' -d 'Show the burned-in caption a recording gets: each frame\'s date and time, the camera\'s name (and --overlay-text).'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura preview" overlay-text' -l 'overlay-text' -d 'With --overlay: a text of one\'s own on the caption\'s second line.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura preview" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura decode" input' -l 'input' -d 'The stream to decode.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura decode" codec' -l 'codec' -d 'Its codec.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura decode" size' -l 'size' -d 'Frame size, WIDTHxHEIGHT.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura decode" pixel-format' -l 'pixel-format' -d 'Pixel format of the decoded frames (fourcc), e.g. BG24.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura decode" output' -l 'output' -d 'Where to write the frames (raw).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura decode" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura keys" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura keys" -eq 1' -fa 'add' -d 'Allow a public key (a .pub file, or - for standard input).'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura keys" -eq 1' -fa 'list' -d 'List the allowed keys: number, fingerprint, type, comment.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_positional "obscura keys" -eq 1' -fa 'remove' -d 'Remove keys by number, fingerprint or comment (see `obscura keys list`).'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura keys add" view' -l 'view' -d 'The live view account\'s keys (view only), not the retrieval account\'s.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura keys add" file' -l 'file' -d 'The authorized keys file (default: /etc/obscura/fetch_authorized_keys; with --view, /etc/obscura/view_authorized_keys).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura keys add" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura keys list" view' -l 'view' -d 'The live view account\'s keys (view only), not the retrieval account\'s.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura keys list" file' -l 'file' -d 'The authorized keys file (default: /etc/obscura/fetch_authorized_keys; with --view, /etc/obscura/view_authorized_keys).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura keys list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura keys remove" view' -l 'view' -d 'The live view account\'s keys (view only), not the retrieval account\'s.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura keys remove" file' -l 'file' -d 'The authorized keys file (default: /etc/obscura/fetch_authorized_keys; with --view, /etc/obscura/view_authorized_keys).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura keys remove" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura pull" p port' -l 'port' -s 'p' -d 'SSH port.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura pull" i identity' -l 'identity' -s 'i' -d 'Private key file.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura pull" known-hosts' -l 'known-hosts' -d 'known_hosts file to check the device\'s host key against.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura pull" accept-new-host-key' -l 'accept-new-host-key' -d 'Trust and remember the device\'s host key on first contact (ssh\'s accept-new).'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura pull"' -l 'ssh-option' -d 'An extra ssh -o option, e.g. ProxyJump=gateway (repeatable).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura pull" limit-kbps' -l 'limit-kbps' -d 'Bandwidth limit in kbit/s.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura pull" delete' -l 'delete' -d 'Remove files on the device once their copies here are verified (needs deploy/install --allow-delete on the device).'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura pull"' -l 'remote-folder' -d 'A folder on the device (repeatable; default /recordings, /photos and /media/obscura/obscura/recordings, the retrieval account\'s view).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura pull" identity-file' -l 'identity-file' -d 'An age identity file (age-keygen\'s): encrypted files (.age) are decrypted here after they are verified.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura pull" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura collect" fleet' -l 'fleet' -d 'The fleet file.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura collect"' -l 'kiosk' -d 'Collect only this kiosk (repeatable).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura collect" every' -l 'every' -d 'Run again this many seconds after each run ends (a service); without it, once.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura collect" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura view" local' -l 'local' -d 'A live socket on this machine instead of SSH (on the kiosk itself).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura view" player' -l 'player' -d 'The player: auto, ffplay or mpv.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura view" output' -l 'output' -d 'Write the stream (Annex B) to FILE (- for standard output) instead of playing it.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura view" i' -s 'i' -d 'The SSH identity (private key) file.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura view" port' -l 'port' -d 'The kiosk\'s SSH port.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura view" known-hosts' -l 'known-hosts' -d 'The known_hosts file the kiosk\'s host key is checked against (default: ssh\'s own).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura view" seconds' -l 'seconds' -d 'Stop after this many seconds.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura view" timings' -l 'timings' -d 'Write each packet\'s times to FILE: its camera time, when the kiosk published it, when it came here (CLOCK_MONOTONIC nanoseconds; the first two are the kiosk\'s clock), key frame, bytes.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura view" browser' -l 'browser' -d 'Show the picture in a web page on this computer (http://127.0.0.1:PORT/, printed), played by the browser\'s WebCodecs, instead of a player.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura view" browser-port' -l 'browser-port' -d 'With --browser: the page\'s port on 127.0.0.1 (default: a free one).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura view" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura view-serve" name' -l 'name' -d 'Who watches, for the journal (a view key\'s comment).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura view-serve" socket' -l 'socket' -d 'The recorder\'s live socket (live.socket).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura view-serve" ssh-forced' -l 'ssh-forced' -d 'Run as the live view account\'s forced command (sshd\'s ForceCommand): refuse anything but a view, and name the viewer by the SSH key\'s comment.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura view-serve" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura encrypt"' -l 'recipient' -d 'An age recipient (age1…); repeatable.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura encrypt" recipients-file' -l 'recipients-file' -d 'A file of age recipients, one per line.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura encrypt" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura decrypt" identity-file' -l 'identity-file' -d 'An age identity file (age-keygen\'s).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura decrypt" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura beep" device' -l 'device' -d 'ALSA playback device.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura beep" every' -l 'every' -d 'Seconds between beeps.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura beep" count' -l 'count' -d 'Number of beeps.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura beep" lead' -l 'lead' -d 'Seconds of silence before the first beep.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura beep" frequency' -l 'frequency' -d 'Tone frequency in Hz.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura beep" length' -l 'length' -d 'Tone length in milliseconds.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura beep" rate' -l 'rate' -d 'Sample rate in Hz.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura beep" level' -l 'level' -d 'Tone level in dBFS (default about -8.7); above 0 the tone is clipped at full scale, like an overdriven microphone.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura beep" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura listen" device' -l 'device' -d 'ALSA capture device (see `obscura devices`), or auto.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura listen" seconds' -l 'seconds' -d 'Seconds to listen.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura listen" interval' -l 'interval' -d 'Seconds per line.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura listen" rate' -l 'rate' -d 'Sample rate in Hz.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura listen" channels' -l 'channels' -d 'Channels.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura listen" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura watch" camera' -l 'camera' -d 'Camera id (see `obscura devices`), synthetic, or file:PATH (raw frames, with --size and --pixel-format).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura watch" size' -l 'size' -d 'Frame size, e.g. 1920x1080.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura watch" pixel-format' -l 'pixel-format' -d 'Camera pixel format, by name or fourcc, e.g. NV12 or BGR888 (BG24).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura watch" seconds' -l 'seconds' -d 'How long to watch, in seconds.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura watch" dark-luma' -l 'dark-luma' -d 'Dark: mean luma at or below this (0–255; black is 16).' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura watch" flat-detail' -l 'flat-detail' -d 'No detail: neighbouring points differ by at most this on average.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura watch" hold' -l 'hold' -d 'Seconds a condition holds before it is declared.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura watch" clear-after' -l 'clear-after' -d 'Seconds a condition is gone before it clears.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura watch" rate' -l 'rate' -d 'Frames a second looked at.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura watch" conditions' -l 'conditions' -d 'Conditions watched, comma-separated: dark, no_detail, frozen; tampering, judged against the scene as first seen: covered, partly_covered, defocused, redirected.' -rfka ''
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura watch" measures' -l 'measures' -d 'Print the grid\'s measures once a second.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura watch" loop' -l 'loop' -d 'A file camera: start the file again at its end, until --seconds of its time.'
complete -c 'obscura' -n '__obscura_should_offer_completions_for_flags_or_options "obscura watch" h help' -s 'h' -l 'help' -d 'Show help information.'
