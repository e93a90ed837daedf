
__obscura_cursor_index_in_current_word() {
    local remaining="${COMP_LINE}"

    local word
    for word in "${COMP_WORDS[@]::COMP_CWORD}"; do
        remaining="${remaining##*([[:space:]])"${word}"*([[:space:]])}"
    done

    local -ir index="$((COMP_POINT - ${#COMP_LINE} + ${#remaining}))"
    if [[ "${index}" -le 0 ]]; then
        printf 0
    else
        printf %s "${index}"
    fi
}

# positional arguments:
#
# - 1: the current (sub)command's count of positional arguments
#
# required variables:
#
# - repeating_flags: the repeating flags that the current (sub)command can accept
# - non_repeating_flags: the non-repeating flags that the current (sub)command can accept
# - repeating_options: the repeating options that the current (sub)command can accept
# - non_repeating_options: the non-repeating options that the current (sub)command can accept
# - positional_number: value ignored
# - unparsed_words: unparsed words from the current command line
#
# modified variables:
#
# - non_repeating_flags: remove flags for this (sub)command that are already on the command line
# - non_repeating_options: remove options for this (sub)command that are already on the command line
# - positional_number: set to the current positional number
# - unparsed_words: remove all flags, options, and option values for this (sub)command
__obscura_offer_flags_options() {
    local -ir positional_count="${1}"
    positional_number=0

    local was_flag_option_terminator_seen=false
    local is_parsing_option_value=false

    local -ar unparsed_word_indices=("${!unparsed_words[@]}")
    local -i word_index
    for word_index in "${unparsed_word_indices[@]}"; do
        if "${is_parsing_option_value}"; then
            # This word is an option value:
            # Reset marker for next word iff not currently the last word
            [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]] && is_parsing_option_value=false
            unset "unparsed_words[${word_index}]"
            # Do not process this word as a flag or an option
            continue
        fi

        local word="${unparsed_words["${word_index}"]}"
        if ! "${was_flag_option_terminator_seen}"; then
            case "${word}" in
            --)
                unset "unparsed_words[${word_index}]"
                # by itself -- is a flag/option terminator, but if it is the last word, it is the start of a completion
                if [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]]; then
                    was_flag_option_terminator_seen=true
                fi
                continue
                ;;
            -*)
                # ${word} is a flag or an option
                # If ${word} is an option, mark that the next word to be parsed is an option value
                local option
                for option in "${repeating_options[@]}" "${non_repeating_options[@]}"; do
                    [[ "${word}" = "${option}" ]] && is_parsing_option_value=true && break
                done

                # Remove ${word} from ${non_repeating_flags} or ${non_repeating_options} so it isn't offered again
                local not_found=true
                local -i index
                for index in "${!non_repeating_flags[@]}"; do
                    if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                        unset "non_repeating_flags[${index}]"
                        non_repeating_flags=("${non_repeating_flags[@]}")
                        not_found=false
                        break
                    fi
                done
                if "${not_found}"; then
                    for index in "${!non_repeating_flags[@]}"; do
                        if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                            unset "non_repeating_flags[${index}]"
                            non_repeating_flags=("${non_repeating_flags[@]}")
                            break
                        fi
                    done
                fi
                unset "unparsed_words[${word_index}]"
                continue
                ;;
            esac
        fi

        # ${word} is neither a flag, nor an option, nor an option value
        if [[ "${positional_number}" -lt "${positional_count}" || "${positional_count}" -lt 0 ]]; then
            # ${word} is a positional
            ((positional_number++))
            unset "unparsed_words[${word_index}]"
        else
            if [[ -z "${word}" ]]; then
                # Could be completing a flag, option, or subcommand
                positional_number=-1
            else
                # ${word} is a subcommand or invalid, so stop processing this (sub)command
                positional_number=-2
            fi
            break
        fi
    done

    unparsed_words=("${unparsed_words[@]}")

    if\
        ! "${was_flag_option_terminator_seen}"\
        && ! "${is_parsing_option_value}"\
        && [[ ("${cur}" = -* && "${positional_number}" -ge 0) || "${positional_number}" -eq -1 ]]
    then
        COMPREPLY+=($(compgen -W "${repeating_flags[*]} ${non_repeating_flags[*]} ${repeating_options[*]} ${non_repeating_options[*]}" -- "${cur}"))
    fi
}

__obscura_add_completions() {
    local completion
    while IFS='' read -r completion; do
        COMPREPLY+=("${completion}")
    done < <(IFS=$'\n' compgen "${@}" -- "${cur}")
}

__obscura_custom_complete() {
    if [[ -n "${cur}" || -z ${COMP_WORDS[${COMP_CWORD}]} || "${COMP_LINE:${COMP_POINT}:1}" != ' ' ]]; then
        local -ar words=("${COMP_WORDS[@]}")
    else
        local -ar words=("${COMP_WORDS[@]::${COMP_CWORD}}" '' "${COMP_WORDS[@]:${COMP_CWORD}}")
    fi

    "${COMP_WORDS[0]}" "${@}" "${words[@]}"
}

_obscura() {
    local state
    state="$(shopt -p;shopt -po)"
    trap "${state//$'\n'/;}" RETURN
    shopt -s extglob
    set +o history +o posix

    local -xr SAP_SHELL=bash
    local -x SAP_SHELL_VERSION
    SAP_SHELL_VERSION="$(IFS='.';printf %s "${BASH_VERSINFO[*]}")"
    local -r SAP_SHELL_VERSION

    local -r cur="${2}"
    local -r prev="${3}"

    local -i positional_number
    local -a unparsed_words=("${COMP_WORDS[@]:1:${COMP_CWORD}}")

    local -a repeating_flags=()
    local -a non_repeating_flags=(--version -h --help)
    local -a repeating_options=()
    local -a non_repeating_options=()
    __obscura_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    devices|record|stream|gpio|run|status|ctl|config|doctor|photo|dng|preview|decode|keys|pull|collect|view|view-serve|encrypt|decrypt|beep|listen|watch|help)
        # Offer subcommand argument completions
        "_obscura_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'devices record stream gpio run status ctl config doctor photo dng preview decode keys pull collect view view-serve encrypt decrypt beep listen watch help' -- "${cur}"))
        ;;
    esac
}

_obscura_devices() {
    repeating_flags=()
    non_repeating_flags=(--controls --version -h --help)
    repeating_options=()
    non_repeating_options=()
    __obscura_offer_flags_options 0
}

_obscura_record() {
    repeating_flags=()
    non_repeating_flags=(--align-to-age-chunks --overlay --overlay-on-preview --preview --version -h --help)
    repeating_options=(--recipient)
    non_repeating_options=(--duration --output --recipients-file --timestamps --overlay-text --overlay-position --overlay-size --overlay-colour --overlay-background --overlay-font --container --camera --size --pixel-format --codec --bit-rate --preset --threads --frame-rate --keyframe-interval --fragment --max-size --segment --min-free-space --pre-record --trigger-after --pre-record-bytes --encoder --save-frame --through --audio --audio-codec --audio-rate --audio-channels --audio-bit-rate)
    __obscura_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--duration')
        return
        ;;
    '--output')
        return
        ;;
    '--recipient')
        return
        ;;
    '--recipients-file')
        return
        ;;
    '--timestamps')
        return
        ;;
    '--overlay-text')
        return
        ;;
    '--overlay-position')
        return
        ;;
    '--overlay-size')
        return
        ;;
    '--overlay-colour')
        return
        ;;
    '--overlay-background')
        return
        ;;
    '--overlay-font')
        return
        ;;
    '--container')
        return
        ;;
    '--camera')
        return
        ;;
    '--size')
        return
        ;;
    '--pixel-format')
        return
        ;;
    '--codec')
        return
        ;;
    '--bit-rate')
        return
        ;;
    '--preset')
        return
        ;;
    '--threads')
        return
        ;;
    '--frame-rate')
        return
        ;;
    '--keyframe-interval')
        return
        ;;
    '--fragment')
        return
        ;;
    '--max-size')
        return
        ;;
    '--segment')
        return
        ;;
    '--min-free-space')
        return
        ;;
    '--pre-record')
        return
        ;;
    '--trigger-after')
        return
        ;;
    '--pre-record-bytes')
        return
        ;;
    '--encoder')
        return
        ;;
    '--save-frame')
        return
        ;;
    '--through')
        return
        ;;
    '--audio')
        return
        ;;
    '--audio-codec')
        return
        ;;
    '--audio-rate')
        return
        ;;
    '--audio-channels')
        return
        ;;
    '--audio-bit-rate')
        return
        ;;
    esac
}

_obscura_stream() {
    repeating_flags=()
    non_repeating_flags=(--metadata --quiet --stats --version -h --help)
    repeating_options=(--set)
    non_repeating_options=(--camera --size --preset --frames --duration --raw-output --hold-across-reconfiguration)
    __obscura_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--camera')
        return
        ;;
    '--size')
        return
        ;;
    '--preset')
        return
        ;;
    '--frames')
        return
        ;;
    '--duration')
        return
        ;;
    '--set')
        return
        ;;
    '--raw-output')
        return
        ;;
    '--hold-across-reconfiguration')
        return
        ;;
    esac
}

_obscura_gpio() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __obscura_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    watch|set|button)
        # Offer subcommand argument completions
        "_obscura_gpio_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'watch set button' -- "${cur}"))
        ;;
    esac
}

_obscura_gpio_watch() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--chip --line --count --timeout --bias)
    __obscura_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--chip')
        return
        ;;
    '--line')
        return
        ;;
    '--count')
        return
        ;;
    '--timeout')
        return
        ;;
    '--bias')
        return
        ;;
    esac
}

_obscura_gpio_set() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--chip --line --hold)
    __obscura_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--chip')
        return
        ;;
    '--line')
        return
        ;;
    '--hold')
        return
        ;;
    esac
}

_obscura_gpio_button() {
    repeating_flags=()
    non_repeating_flags=(--active-low --version -h --help)
    repeating_options=()
    non_repeating_options=(--chip --line --count --timeout --debounce --long-press)
    __obscura_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--chip')
        return
        ;;
    '--line')
        return
        ;;
    '--count')
        return
        ;;
    '--timeout')
        return
        ;;
    '--debounce')
        return
        ;;
    '--long-press')
        return
        ;;
    esac
}

_obscura_run() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--config --board)
    __obscura_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--config')
        return
        ;;
    '--board')
        return
        ;;
    esac
}

_obscura_status() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--socket --config)
    __obscura_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--socket')
        return
        ;;
    '--config')
        return
        ;;
    esac
}

_obscura_ctl() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--socket --config --camera)
    __obscura_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--socket')
        return
        ;;
    '--config')
        return
        ;;
    '--camera')
        return
        ;;
    esac
}

_obscura_config() {
    repeating_flags=()
    non_repeating_flags=(--check --version -h --help)
    repeating_options=()
    non_repeating_options=(--format --date)
    __obscura_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--format')
        __obscura_add_completions -W 'text'$'\n''markdown'$'\n''man'
        return
        ;;
    '--date')
        return
        ;;
    esac
}

_obscura_doctor() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--config)
    __obscura_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--config')
        return
        ;;
    esac
}

_obscura_photo() {
    repeating_flags=()
    non_repeating_flags=(--overlay --raw --raw-only --version -h --help)
    repeating_options=(--recipient)
    non_repeating_options=(--output --recipients-file --overlay-text --camera --size --pixel-format --quality --thumbnail --warm-up --bracket-ev --bracket-manual)
    __obscura_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--output')
        return
        ;;
    '--recipient')
        return
        ;;
    '--recipients-file')
        return
        ;;
    '--overlay-text')
        return
        ;;
    '--camera')
        return
        ;;
    '--size')
        return
        ;;
    '--pixel-format')
        return
        ;;
    '--quality')
        return
        ;;
    '--thumbnail')
        return
        ;;
    '--warm-up')
        return
        ;;
    '--bracket-ev')
        return
        ;;
    '--bracket-manual')
        return
        ;;
    esac
}

_obscura_dng() {
    repeating_flags=()
    non_repeating_flags=(--no-preview --version -h --help)
    repeating_options=()
    non_repeating_options=(--node --pattern --bits --size --output)
    __obscura_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--node')
        return
        ;;
    '--pattern')
        return
        ;;
    '--bits')
        return
        ;;
    '--size')
        return
        ;;
    '--output')
        return
        ;;
    esac
}

_obscura_preview() {
    repeating_flags=()
    non_repeating_flags=(--pattern --list --overlay --version -h --help)
    repeating_options=()
    non_repeating_options=(--camera --size --pixel-format --duration --device --connector --plane --gravity --rotation --destination --background --pattern-size --writeback --save-frame --overlay-text)
    __obscura_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--camera')
        return
        ;;
    '--size')
        return
        ;;
    '--pixel-format')
        return
        ;;
    '--duration')
        return
        ;;
    '--device')
        return
        ;;
    '--connector')
        return
        ;;
    '--plane')
        return
        ;;
    '--gravity')
        return
        ;;
    '--rotation')
        return
        ;;
    '--destination')
        return
        ;;
    '--background')
        return
        ;;
    '--pattern-size')
        return
        ;;
    '--writeback')
        return
        ;;
    '--save-frame')
        return
        ;;
    '--overlay-text')
        return
        ;;
    esac
}

_obscura_decode() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--input --codec --size --pixel-format --output)
    __obscura_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--input')
        return
        ;;
    '--codec')
        return
        ;;
    '--size')
        return
        ;;
    '--pixel-format')
        return
        ;;
    '--output')
        return
        ;;
    esac
}

_obscura_keys() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __obscura_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    add|list|remove)
        # Offer subcommand argument completions
        "_obscura_keys_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'add list remove' -- "${cur}"))
        ;;
    esac
}

_obscura_keys_add() {
    repeating_flags=()
    non_repeating_flags=(--view --version -h --help)
    repeating_options=()
    non_repeating_options=(--file)
    __obscura_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--file')
        return
        ;;
    esac
}

_obscura_keys_list() {
    repeating_flags=()
    non_repeating_flags=(--view --version -h --help)
    repeating_options=()
    non_repeating_options=(--file)
    __obscura_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--file')
        return
        ;;
    esac
}

_obscura_keys_remove() {
    repeating_flags=()
    non_repeating_flags=(--view --version -h --help)
    repeating_options=()
    non_repeating_options=(--file)
    __obscura_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--file')
        return
        ;;
    esac
}

_obscura_pull() {
    repeating_flags=()
    non_repeating_flags=(--accept-new-host-key --delete --version -h --help)
    repeating_options=(--ssh-option --remote-folder)
    non_repeating_options=(--port -p --identity -i --known-hosts --limit-kbps --identity-file)
    __obscura_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--port'|'-p')
        return
        ;;
    '--identity'|'-i')
        return
        ;;
    '--known-hosts')
        return
        ;;
    '--ssh-option')
        return
        ;;
    '--limit-kbps')
        return
        ;;
    '--remote-folder')
        return
        ;;
    '--identity-file')
        return
        ;;
    esac
}

_obscura_collect() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=(--kiosk)
    non_repeating_options=(--fleet --every)
    __obscura_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--fleet')
        return
        ;;
    '--kiosk')
        return
        ;;
    '--every')
        return
        ;;
    esac
}

_obscura_view() {
    repeating_flags=()
    non_repeating_flags=(--browser --version -h --help)
    repeating_options=()
    non_repeating_options=(--local --player --camera --output -i --port --known-hosts --seconds --timings --browser-port)
    __obscura_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--local')
        return
        ;;
    '--player')
        return
        ;;
    '--camera')
        return
        ;;
    '--output')
        return
        ;;
    '-i')
        return
        ;;
    '--port')
        return
        ;;
    '--known-hosts')
        return
        ;;
    '--seconds')
        return
        ;;
    '--timings')
        return
        ;;
    '--browser-port')
        return
        ;;
    esac
}

_obscura_view-serve() {
    repeating_flags=()
    non_repeating_flags=(--ssh-forced --version -h --help)
    repeating_options=()
    non_repeating_options=(--name --socket --camera)
    __obscura_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--name')
        return
        ;;
    '--socket')
        return
        ;;
    '--camera')
        return
        ;;
    esac
}

_obscura_encrypt() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=(--recipient)
    non_repeating_options=(--recipients-file)
    __obscura_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--recipient')
        return
        ;;
    '--recipients-file')
        return
        ;;
    esac
}

_obscura_decrypt() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--identity-file)
    __obscura_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--identity-file')
        return
        ;;
    esac
}

_obscura_beep() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--device --every --count --lead --frequency --length --rate --level)
    __obscura_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--device')
        return
        ;;
    '--every')
        return
        ;;
    '--count')
        return
        ;;
    '--lead')
        return
        ;;
    '--frequency')
        return
        ;;
    '--length')
        return
        ;;
    '--rate')
        return
        ;;
    '--level')
        return
        ;;
    esac
}

_obscura_listen() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--device --seconds --interval --rate --channels)
    __obscura_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--device')
        return
        ;;
    '--seconds')
        return
        ;;
    '--interval')
        return
        ;;
    '--rate')
        return
        ;;
    '--channels')
        return
        ;;
    esac
}

_obscura_watch() {
    repeating_flags=()
    non_repeating_flags=(--measures --loop --version -h --help)
    repeating_options=()
    non_repeating_options=(--camera --size --pixel-format --seconds --dark-luma --flat-detail --hold --clear-after --rate --conditions)
    __obscura_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--camera')
        return
        ;;
    '--size')
        return
        ;;
    '--pixel-format')
        return
        ;;
    '--seconds')
        return
        ;;
    '--dark-luma')
        return
        ;;
    '--flat-detail')
        return
        ;;
    '--hold')
        return
        ;;
    '--clear-after')
        return
        ;;
    '--rate')
        return
        ;;
    '--conditions')
        return
        ;;
    esac
}

_obscura_help() {
    repeating_flags=()
    non_repeating_flags=(--version)
    repeating_options=()
    non_repeating_options=()
    __obscura_offer_flags_options -1
}

complete -o filenames -F _obscura obscura
