# bash completion for ringdl                                    -*- shell-script -*-
# Generated from ringdl's option table by `ringdl --generate=bash`; do not edit.
#
# Install as /usr/share/bash-completion/completions/ringdl, or source it from ~/.bashrc.
#
# aria2c: bash completes an alias by the alias's own name, so after `alias aria2c=ringdl` this file
# registers _ringdl for aria2c too, unless aria2's own completion for aria2c is installed (it knows
# the same options and stays in charge). bash-completion loads this file the first time `ringdl` is
# completed; to complete `aria2c` from the start of a shell, source this file in ~/.bashrc after the
# alias (a package may also install it as completions/aria2c.bash, which bash-completion tries only
# after aria2's own completions/aria2c).

_ringdl() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev= opt= prefix= i
    COMPREPLY=()
    (( COMP_CWORD > 0 )) && prev=${COMP_WORDS[COMP_CWORD-1]}
    # After `--` every word is a URI or a file.
    for (( i = 1; i < COMP_CWORD; i++ )); do
        if [[ ${COMP_WORDS[i]} == -- ]]; then
            _ringdl_paths '' "$cur" -f
            return 0
        fi
    done
    # `--name=value`: bash splits it at `=` when `=` is in COMP_WORDBREAKS (the default).
    if [[ $cur == = && $prev == --?* ]]; then
        opt=$prev cur=
    elif [[ $prev == = ]] && (( COMP_CWORD > 1 )) && [[ ${COMP_WORDS[COMP_CWORD-2]} == --?* ]]; then
        opt=${COMP_WORDS[COMP_CWORD-2]}
    elif [[ $cur == --?*=* ]]; then
        opt=${cur%%=*} prefix=${cur%%=*}= cur=${cur#*=}
    elif [[ $cur == -* ]]; then
        _ringdl_words '' "$cur" \
            --version --help --timeout --connect-timeout --max-tries --auto-save-interval --log \
            --dir --out --split --daemon --referer --lowest-speed-limit --piece-length \
            --max-overall-download-limit --max-download-limit --file-allocation \
            --no-file-allocation-limit --allow-overwrite --realtime-chunk-checksum \
            --check-integrity --netrc-path --continue --no-netrc --input-file --deferred-input \
            --max-concurrent-downloads --optimize-concurrent-downloads --force-sequential \
            --auto-file-renaming --parameterized-uri --allow-piece-length-change --no-conf \
            --conf-path --stop --quiet --async-dns --summary-interval --log-level \
            --console-log-level --uri-selector --server-stat-timeout --server-stat-if \
            --server-stat-of --remote-time --max-file-not-found --event-poll --enable-rpc \
            --rpc-listen-port --rpc-user --rpc-passwd --rpc-max-request-size --rpc-listen-all \
            --rpc-allow-origin-all --rpc-certificate --rpc-private-key --rpc-secure \
            --rpc-save-upload-metadata --dry-run --reuse-uri --on-download-start \
            --on-download-pause --on-download-stop --on-download-complete --on-download-error \
            --interface --multiple-interface --disable-ipv6 --human-readable --remove-control-file \
            --always-resume --max-resume-failure-tries --save-session --max-connection-per-server \
            --min-split-size --conditional-get --enable-async-dns6 --max-download-result \
            --retry-wait --async-dns-server --show-console-readout --stream-piece-selector \
            --truncate-console-readout --pause --download-result --hash-check-only --checksum \
            --stop-with-process --enable-mmap --force-save --save-not-found --disk-cache --gid \
            --save-session-interval --enable-color --rpc-secret --dscp --pause-metadata \
            --rlimit-nofile --min-tls-version --socket-recv-buffer-size --max-mmap-limit --stderr \
            --keep-unfinished-download-result --ftp-user --ftp-passwd --ftp-type --ftp-pasv \
            --ftp-reuse-connection --ssh-host-key-md --http-user --http-passwd --user-agent \
            --load-cookies --save-cookies --enable-http-keep-alive --enable-http-pipelining \
            --header --certificate --private-key --ca-certificate --check-certificate --use-head \
            --http-auth-challenge --http-no-cache --no-want-digest-header --http-accept-gzip \
            --content-disposition-default-utf8 --http-proxy --https-proxy --ftp-proxy --all-proxy \
            --no-proxy --proxy-method --http-proxy-user --http-proxy-passwd --https-proxy-user \
            --https-proxy-passwd --ftp-proxy-user --ftp-proxy-passwd --all-proxy-user \
            --all-proxy-passwd --show-files --max-overall-upload-limit --max-upload-limit \
            --torrent-file --listen-port --follow-torrent --select-file --seed-time --seed-ratio \
            --peer-id-prefix --peer-agent --enable-peer-exchange --enable-dht --dht-listen-port \
            --dht-entry-point --dht-file-path --enable-dht6 --dht-listen-addr6 --dht-entry-point6 \
            --dht-file-path6 --bt-min-crypto-level --bt-require-crypto \
            --bt-request-peer-speed-limit --bt-max-open-files --bt-seed-unverified \
            --bt-hash-check-seed --bt-max-peers --bt-external-ip --index-out --bt-tracker-interval \
            --bt-stop-timeout --bt-prioritize-piece --bt-save-metadata --bt-metadata-only \
            --bt-enable-lpd --bt-lpd-interface --bt-tracker-timeout --bt-tracker-connect-timeout \
            --dht-message-timeout --on-bt-download-complete --bt-tracker --bt-exclude-tracker \
            --bt-remove-unselected-file --bt-detach-seed-only --bt-force-encryption \
            --bt-enable-hook-after-hash-check --bt-load-saved-metadata --metalink-file \
            --metalink-version --metalink-language --metalink-os --metalink-location \
            --follow-metalink --metalink-preferred-protocol --metalink-enable-unique-protocol \
            --metalink-base-uri --engine -v -h -t -m -l -d -o -s -D -a -V -c -n -i -j -Z -P -q -R \
            -x -k -p -U -S -u -T -O -M
        return 0
    else
        case $prev in
            -t|--timeout|--connect-timeout|-m|--max-tries|--auto-save-interval|-l|--log|-d| \
                --dir|-o|--out|-s|--split|--referer|--lowest-speed-limit|--piece-length| \
                --max-overall-download-limit|--max-download-limit|-a|--file-allocation| \
                --no-file-allocation-limit|--netrc-path|-i|--input-file|-j| \
                --max-concurrent-downloads|--conf-path|--stop|--summary-interval|--log-level| \
                --console-log-level|--uri-selector|--server-stat-timeout|--server-stat-if| \
                --server-stat-of|--max-file-not-found|--event-poll|--rpc-listen-port|--rpc-user| \
                --rpc-passwd|--rpc-max-request-size|--rpc-certificate|--rpc-private-key| \
                --on-download-start|--on-download-pause|--on-download-stop|--on-download-complete| \
                --on-download-error|--interface|--multiple-interface|--max-resume-failure-tries| \
                --save-session|-x|--max-connection-per-server|-k|--min-split-size| \
                --max-download-result|--retry-wait|--async-dns-server|--show-console-readout| \
                --stream-piece-selector|--download-result|--checksum|--stop-with-process| \
                --disk-cache|--gid|--save-session-interval|--rpc-secret|--dscp|--rlimit-nofile| \
                --min-tls-version|--socket-recv-buffer-size|--max-mmap-limit|--ftp-user| \
                --ftp-passwd|--ftp-type|--ssh-host-key-md|--http-user|--http-passwd|-U| \
                --user-agent|--load-cookies|--save-cookies|--header|--certificate|--private-key| \
                --ca-certificate|--http-proxy|--https-proxy|--ftp-proxy|--all-proxy|--no-proxy| \
                --proxy-method|--http-proxy-user|--http-proxy-passwd|--https-proxy-user| \
                --https-proxy-passwd|--ftp-proxy-user|--ftp-proxy-passwd|--all-proxy-user| \
                --all-proxy-passwd|--max-overall-upload-limit|-u|--max-upload-limit|-T| \
                --torrent-file|--listen-port|--follow-torrent|--select-file|--seed-time| \
                --seed-ratio|--peer-id-prefix|--peer-agent|--dht-listen-port|--dht-entry-point| \
                --dht-file-path|--dht-listen-addr6|--dht-entry-point6|--dht-file-path6| \
                --bt-min-crypto-level|--bt-request-peer-speed-limit|--bt-max-open-files| \
                --bt-max-peers|--bt-external-ip|-O|--index-out|--bt-tracker-interval| \
                --bt-stop-timeout|--bt-prioritize-piece|--bt-lpd-interface|--bt-tracker-timeout| \
                --bt-tracker-connect-timeout|--dht-message-timeout|--on-bt-download-complete| \
                --bt-tracker|--bt-exclude-tracker|-M|--metalink-file|--metalink-version| \
                --metalink-language|--metalink-os|--metalink-location|--follow-metalink| \
                --metalink-preferred-protocol|--metalink-base-uri|--engine)
                opt=$prev
                ;;
        esac
    fi
    if [[ -n $opt ]]; then
        case $opt in
            -l|--log|-o|--out|--netrc-path|-i|--input-file|--conf-path|--server-stat-if| \
                --server-stat-of|--rpc-certificate|--rpc-private-key|--on-download-start| \
                --on-download-pause|--on-download-stop|--on-download-complete|--on-download-error| \
                --save-session|--load-cookies|--save-cookies|--certificate|--private-key| \
                --ca-certificate|-T|--torrent-file|--dht-file-path|--dht-file-path6| \
                --on-bt-download-complete|-M|--metalink-file)
                _ringdl_paths "$prefix" "$cur" -f
                ;;
            -d|--dir)
                _ringdl_paths "$prefix" "$cur" -d
                ;;
            -D|--daemon|--allow-overwrite|--realtime-chunk-checksum|-V|--check-integrity|-c| \
                --continue|-n|--no-netrc|--deferred-input|-Z|--force-sequential| \
                --auto-file-renaming|-P|--parameterized-uri|--allow-piece-length-change|--no-conf| \
                -q|--quiet|--async-dns|-R|--remote-time|--enable-rpc|--rpc-listen-all| \
                --rpc-allow-origin-all|--rpc-secure|--rpc-save-upload-metadata|--dry-run| \
                --reuse-uri|--disable-ipv6|--human-readable|--remove-control-file|--always-resume| \
                --conditional-get|--enable-async-dns6|--show-console-readout| \
                --truncate-console-readout|--pause|--hash-check-only|--enable-mmap|--force-save| \
                --save-not-found|--enable-color|--pause-metadata|--stderr| \
                --keep-unfinished-download-result|-p|--ftp-pasv|--ftp-reuse-connection| \
                --enable-http-keep-alive|--enable-http-pipelining|--check-certificate|--use-head| \
                --http-auth-challenge|--http-no-cache|--no-want-digest-header|--http-accept-gzip| \
                --content-disposition-default-utf8|-S|--show-files|--enable-peer-exchange| \
                --enable-dht|--enable-dht6|--bt-require-crypto|--bt-seed-unverified| \
                --bt-hash-check-seed|--bt-save-metadata|--bt-metadata-only|--bt-enable-lpd| \
                --bt-remove-unselected-file|--bt-detach-seed-only|--bt-force-encryption| \
                --bt-enable-hook-after-hash-check|--bt-load-saved-metadata| \
                --metalink-enable-unique-protocol)
                _ringdl_words "$prefix" "$cur" true false
                ;;
            -a|--file-allocation)
                _ringdl_words "$prefix" "$cur" none prealloc trunc falloc
                ;;
            --log-level|--console-log-level)
                _ringdl_words "$prefix" "$cur" debug info notice warn error
                ;;
            --uri-selector)
                _ringdl_words "$prefix" "$cur" inorder feedback adaptive
                ;;
            --event-poll)
                _ringdl_words "$prefix" "$cur" epoll poll select
                ;;
            --stream-piece-selector)
                _ringdl_words "$prefix" "$cur" default inorder random geom
                ;;
            --download-result)
                _ringdl_words "$prefix" "$cur" default full hide
                ;;
            --min-tls-version)
                _ringdl_words "$prefix" "$cur" TLSv1.1 TLSv1.2 TLSv1.3
                ;;
            --ftp-type)
                _ringdl_words "$prefix" "$cur" binary ascii
                ;;
            --proxy-method)
                _ringdl_words "$prefix" "$cur" get tunnel
                ;;
            --follow-torrent|--follow-metalink)
                _ringdl_words "$prefix" "$cur" true mem false
                ;;
            --bt-min-crypto-level)
                _ringdl_words "$prefix" "$cur" plain arc4
                ;;
            --metalink-preferred-protocol)
                _ringdl_words "$prefix" "$cur" http https ftp none
                ;;
            --engine)
                _ringdl_words "$prefix" "$cur" auto uring portable
                ;;
        esac
        return 0
    fi
    _ringdl_paths '' "$cur" -f
}

# $1: text to put back before each reply, $2: the word so far, $3...: the words to offer.
_ringdl_words() {
    local prefix=$1 cur=$2
    shift 2
    mapfile -t COMPREPLY < <(compgen -W "$*" -- "$cur")
    [[ -z $prefix ]] || COMPREPLY=("${COMPREPLY[@]/#/$prefix}")
}

# $1: text to put back before each reply, $2: the path so far, $3: -f for files, -d for directories.
_ringdl_paths() {
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen "$3" -- "$2")
    [[ -z $1 ]] || COMPREPLY=("${COMPREPLY[@]/#/$1}")
}

complete -F _ringdl ringdl

# aria2c (see the top of this file). The guard: this file may be what loading aria2c's completion
# finds (installed as aria2c.bash), and then it is being sourced from inside itself.
if [[ -z ${_ringdl_registering-} ]]; then
    _ringdl_registering=1
    # Whether aria2c is completed by something else than this file or bash-completion's fallback.
    _ringdl_aria2c_taken() {
        case $(complete -p aria2c 2>/dev/null) in
            '' | *' _minimal '* | *' _comp_complete_minimal '* | *' _ringdl '*) return 1 ;;
        esac
    }
    if ! _ringdl_aria2c_taken; then
        # bash-completion loads a command's completion when it is first needed: let aria2's load.
        if declare -F _comp_load >/dev/null; then
            _comp_load -- aria2c
        elif declare -F __load_completion >/dev/null; then
            __load_completion aria2c
        fi >/dev/null 2>&1
        _ringdl_aria2c_taken || complete -F _ringdl aria2c
    fi
    unset -f _ringdl_aria2c_taken
    unset _ringdl_registering
fi
