# fish completion for ringdl.
# Generated from ringdl's option table by `ringdl --generate=fish`; do not edit.
#
# Install as /usr/share/fish/vendor_completions.d/ringdl.fish. Arguments that are not options
# complete as files (fish's default).
#
# aria2c: in fish, `alias aria2c=ringdl` defines a function aria2c that wraps ringdl, and fish
# completes a wrapping function with the completions of what it wraps, so the alias needs nothing
# more. For an aria2c function written by hand without --wraps, the last line below makes aria2c
# complete like ringdl, but only when aria2c itself is not installed, so that aria2's own completions
# stay with aria2.

# Directories, for the value being completed without the `--name=` before it.
function __ringdl_dirs
    __fish_complete_directories (commandline -ct | string replace -r -- '^-[^=]*=' '')
end

complete -c ringdl -s 'v' -l 'version' -d 'Print the version and exit'
complete -c ringdl -s 'h' -l 'help' -d 'Print usage and exit; a TAG or KEYWORD picks which options are shown'
complete -c ringdl -s 't' -l 'timeout' -d 'Seconds without any data before a connection is given up' -x
complete -c ringdl -l 'connect-timeout' -d 'Seconds allowed to establish a connection to a server or proxy' -x
complete -c ringdl -s 'm' -l 'max-tries' -d 'How many times to try a download; 0 means no limit' -x
complete -c ringdl -l 'auto-save-interval' -d 'Seconds between saves of the .aria2 control file; 0 saves only at the end' -x
complete -c ringdl -s 'l' -l 'log' -d 'Write a log to FILE; \'-\' writes it to standard output' -r -F
complete -c ringdl -s 'd' -l 'dir' -d 'Directory to save downloads in' -x -a '(__ringdl_dirs)'
complete -c ringdl -s 'o' -l 'out' -d 'Name to save the download as, relative to --dir' -r -F
complete -c ringdl -s 's' -l 'split' -d 'How many connections one download uses in total, over all its URIs' -x
complete -c ringdl -s 'D' -l 'daemon' -d 'Detach from the terminal and keep running in the background' -f -a 'true false'
complete -c ringdl -l 'referer' -d 'Referer header to send; \'*\' sends each download\'s own URI' -x
complete -c ringdl -l 'lowest-speed-limit' -d 'Drop a connection whose speed falls to SPEED bytes/s or below; 0 disables' -x
complete -c ringdl -l 'piece-length' -d 'Size of the pieces HTTP(S)/FTP downloads are cut into' -x
complete -c ringdl -l 'max-overall-download-limit' -d 'Cap on the total download speed in bytes/s; 0 means no cap' -x
complete -c ringdl -l 'max-download-limit' -d 'Cap on each download\'s speed in bytes/s; 0 means no cap' -x
complete -c ringdl -s 'a' -l 'file-allocation' -d 'How disk space is reserved before downloading: none, prealloc, trunc, falloc' -x -a 'none prealloc trunc falloc'
complete -c ringdl -l 'no-file-allocation-limit' -d 'Skip file allocation for files smaller than SIZE' -x
complete -c ringdl -l 'allow-overwrite' -d 'Start over, overwriting, when the file exists without a control file' -f -a 'true false'
complete -c ringdl -l 'realtime-chunk-checksum' -d 'Check chunks against their checksums while downloading, when known' -f -a 'true false'
complete -c ringdl -s 'V' -l 'check-integrity' -d 'Verify the file against piece hashes or a whole-file checksum' -f -a 'true false'
complete -c ringdl -l 'netrc-path' -d 'File to read .netrc credentials from' -r -F
complete -c ringdl -s 'c' -l 'continue' -d 'Resume a partly downloaded file that has no control file' -f -a 'true false'
complete -c ringdl -s 'n' -l 'no-netrc' -d 'Do not read credentials from the .netrc file' -f -a 'true false'
complete -c ringdl -s 'i' -l 'input-file' -d 'Download the URIs listed in FILE; \'-\' reads standard input' -r -F
complete -c ringdl -l 'deferred-input' -d 'Read the -i file one entry at a time as downloads start, not all at once' -f -a 'true false'
complete -c ringdl -s 'j' -l 'max-concurrent-downloads' -d 'How many downloads run at the same time' -x
complete -c ringdl -l 'optimize-concurrent-downloads' -d 'Adapt the number of parallel downloads to the measured bandwidth'
complete -c ringdl -s 'Z' -l 'force-sequential' -d 'Download each command-line URI as a file of its own, not as mirrors' -f -a 'true false'
complete -c ringdl -l 'auto-file-renaming' -d 'Save as NAME.N.EXT instead when the target file already exists' -f -a 'true false'
complete -c ringdl -s 'P' -l 'parameterized-uri' -d 'Expand {a,b} alternatives and [000-100:2] ranges in URIs' -f -a 'true false'
complete -c ringdl -l 'allow-piece-length-change' -d 'Carry on when the piece length differs from the control file\'s' -f -a 'true false'
complete -c ringdl -l 'no-conf' -d 'Do not read the aria2.conf configuration file' -f -a 'true false'
complete -c ringdl -l 'conf-path' -d 'Read the configuration from PATH instead of the default aria2.conf' -r -F
complete -c ringdl -l 'stop' -d 'Quit after SEC seconds; 0 disables' -x
complete -c ringdl -s 'q' -l 'quiet' -d 'Print nothing on the console' -f -a 'true false'
complete -c ringdl -l 'async-dns' -d 'Resolve host names asynchronously' -f -a 'true false'
complete -c ringdl -l 'summary-interval' -d 'Seconds between progress summaries; 0 turns them off' -x
complete -c ringdl -l 'log-level' -d 'Lowest level of message written to the --log file' -x -a 'debug info notice warn error'
complete -c ringdl -l 'console-log-level' -d 'Lowest level of message printed on the console' -x -a 'debug info notice warn error'
complete -c ringdl -l 'uri-selector' -d 'How the next mirror is picked: inorder, feedback or adaptive' -x -a 'inorder feedback adaptive'
complete -c ringdl -l 'server-stat-timeout' -d 'Seconds after last contact before a server\'s profile is discarded' -x
complete -c ringdl -l 'server-stat-if' -d 'Load the server performance profile from FILE' -r -F
complete -c ringdl -l 'server-stat-of' -d 'Save the server performance profile to FILE' -r -F
complete -c ringdl -s 'R' -l 'remote-time' -d 'Give the saved file the server\'s modification time, when it is known' -f -a 'true false'
complete -c ringdl -l 'max-file-not-found' -d 'Fail after N \'not found\' answers without any data; 0 disables' -x
complete -c ringdl -l 'event-poll' -d 'Event polling method: epoll, poll or select' -x -a 'epoll poll select'
complete -c ringdl -l 'enable-rpc' -d 'Run the JSON-RPC server (over HTTP and WebSocket)' -f -a 'true false'
complete -c ringdl -l 'rpc-listen-port' -d 'TCP port the RPC server listens on' -x
complete -c ringdl -l 'rpc-user' -d 'User name for the RPC server (deprecated; use --rpc-secret)' -x
complete -c ringdl -l 'rpc-passwd' -d 'Password for the RPC server (deprecated; use --rpc-secret)' -x
complete -c ringdl -l 'rpc-max-request-size' -d 'Largest RPC request accepted; a bigger one is refused (HTTP 413)' -x
complete -c ringdl -l 'rpc-listen-all' -d 'Accept RPC connections on every interface, not only loopback' -f -a 'true false'
complete -c ringdl -l 'rpc-allow-origin-all' -d 'Add \'Access-Control-Allow-Origin: *\' to RPC responses' -f -a 'true false'
complete -c ringdl -l 'rpc-certificate' -d 'PEM certificate for the RPC server\'s TLS' -r -F
complete -c ringdl -l 'rpc-private-key' -d 'Unencrypted PEM private key for the RPC server\'s TLS' -r -F
complete -c ringdl -l 'rpc-secure' -d 'Serve RPC over TLS (https and wss)' -f -a 'true false'
complete -c ringdl -l 'rpc-save-upload-metadata' -d 'Save torrents and Metalinks uploaded over RPC as files in --dir' -f -a 'true false'
complete -c ringdl -l 'dry-run' -d 'Only check that the remote files exist; download nothing' -f -a 'true false'
complete -c ringdl -l 'reuse-uri' -d 'Use already tried URIs again once no untried ones are left' -f -a 'true false'
complete -c ringdl -l 'on-download-start' -d 'Run COMMAND when a download starts' -r -F
complete -c ringdl -l 'on-download-pause' -d 'Run COMMAND when a download is paused' -r -F
complete -c ringdl -l 'on-download-stop' -d 'Run COMMAND when a download stops, whatever the outcome' -r -F
complete -c ringdl -l 'on-download-complete' -d 'Run COMMAND when a download completes' -r -F
complete -c ringdl -l 'on-download-error' -d 'Run COMMAND when a download fails' -r -F
complete -c ringdl -l 'interface' -d 'Bind connections to an interface, IP address or host name' -x
complete -c ringdl -l 'multiple-interface' -d 'Spread connections over a comma-separated list of interfaces' -x
complete -c ringdl -l 'disable-ipv6' -d 'Do not use IPv6' -f -a 'true false'
complete -c ringdl -l 'human-readable' -d 'Show sizes and speeds with units such as 1.2Ki and 3.4Mi in the readout' -f -a 'true false'
complete -c ringdl -l 'remove-control-file' -d 'Delete the control file before starting' -f -a 'true false'
complete -c ringdl -l 'always-resume' -d 'Abort instead of starting over when a download cannot be resumed' -f -a 'true false'
complete -c ringdl -l 'max-resume-failure-tries' -d 'With --always-resume=false: start over after N URIs fail to resume' -x
complete -c ringdl -l 'save-session' -d 'On exit, save failed and unfinished downloads to FILE' -r -F
complete -c ringdl -s 'x' -l 'max-connection-per-server' -d 'Most connections opened to one server for one download' -x
complete -c ringdl -s 'k' -l 'min-split-size' -d 'Never split a range smaller than twice this size between connections' -x
complete -c ringdl -l 'conditional-get' -d 'Download only when the remote file is newer than the local one' -f -a 'true false'
complete -c ringdl -l 'enable-async-dns6' -d 'Also look up IPv6 addresses in the asynchronous resolver (deprecated)' -f -a 'true false'
complete -c ringdl -l 'max-download-result' -d 'How many finished downloads\' results are kept in memory' -x
complete -c ringdl -l 'retry-wait' -d 'Seconds to wait between tries' -x
complete -c ringdl -l 'async-dns-server' -d 'DNS servers for the asynchronous resolver, comma-separated' -x
complete -c ringdl -l 'show-console-readout' -d 'Show the one-line progress readout' -x -a 'true false'
complete -c ringdl -l 'stream-piece-selector' -d 'Which part of a file to fetch next: default, inorder, random, geom' -x -a 'default inorder random geom'
complete -c ringdl -l 'truncate-console-readout' -d 'Cut the progress readout to fit on one line' -f -a 'true false'
complete -c ringdl -l 'pause' -d 'Add downloads paused; only with --enable-rpc' -f -a 'true false'
complete -c ringdl -l 'download-result' -d 'How the Download Results table is printed at the end' -x -a 'default full hide'
complete -c ringdl -l 'hash-check-only' -d 'Stop after the --check-integrity hash check, complete or not' -f -a 'true false'
complete -c ringdl -l 'checksum' -d 'Expected checksum of the file, as TYPE=HEXDIGEST' -x
complete -c ringdl -l 'stop-with-process' -d 'Quit once process PID is no longer running' -x
complete -c ringdl -l 'enable-mmap' -d 'Map files into memory to write them (experimental)' -f -a 'true false'
complete -c ringdl -l 'force-save' -d 'Keep completed and removed downloads in the --save-session file too' -f -a 'true false'
complete -c ringdl -l 'save-not-found' -d 'Keep downloads whose file was not found in the --save-session file' -f -a 'true false'
complete -c ringdl -l 'disk-cache' -d 'Memory used to cache downloaded data before it is written; 0 disables' -x
complete -c ringdl -l 'gid' -d 'GID of the download, as 16 hex digits' -x
complete -c ringdl -l 'save-session-interval' -d 'Also save the --save-session file every SEC seconds; 0 only at exit' -x
complete -c ringdl -l 'enable-color' -d 'Use colour on the console when it is a terminal' -f -a 'true false'
complete -c ringdl -l 'rpc-secret' -d 'Secret token that RPC clients must send' -x
complete -c ringdl -l 'dscp' -d 'DSCP value set on outgoing BitTorrent packets, for QoS' -x
complete -c ringdl -l 'pause-metadata' -d 'Pause downloads created from metadata; only with --enable-rpc' -f -a 'true false'
complete -c ringdl -l 'rlimit-nofile' -d 'Raise the soft limit on open files to NUM' -x
complete -c ringdl -l 'min-tls-version' -d 'Oldest TLS version allowed: TLSv1.1, TLSv1.2 or TLSv1.3' -x -a 'TLSv1.1 TLSv1.2 TLSv1.3'
complete -c ringdl -l 'socket-recv-buffer-size' -d 'Socket receive buffer (SO_RCVBUF) in bytes; 0 keeps the system\'s' -x
complete -c ringdl -l 'max-mmap-limit' -d 'Largest download, by total file size, that --enable-mmap applies to' -x
complete -c ringdl -l 'stderr' -d 'Print console output on standard error instead of standard output' -f -a 'true false'
complete -c ringdl -l 'keep-unfinished-download-result' -d 'Keep unfinished downloads\' results past --max-download-result' -f -a 'true false'
complete -c ringdl -l 'ftp-user' -d 'FTP user name, for every URI' -x
complete -c ringdl -l 'ftp-passwd' -d 'FTP password, for every URI' -x
complete -c ringdl -l 'ftp-type' -d 'FTP transfer type: binary or ascii' -x -a 'binary ascii'
complete -c ringdl -s 'p' -l 'ftp-pasv' -d 'Use FTP passive mode; false uses active mode' -f -a 'true false'
complete -c ringdl -l 'ftp-reuse-connection' -d 'Reuse FTP connections' -f -a 'true false'
complete -c ringdl -l 'ssh-host-key-md' -d 'Expected SFTP host key fingerprint, as TYPE=HEXDIGEST' -x
complete -c ringdl -l 'http-user' -d 'User name for HTTP authentication, for every URI' -x
complete -c ringdl -l 'http-passwd' -d 'Password for HTTP authentication, for every URI' -x
complete -c ringdl -s 'U' -l 'user-agent' -d 'User-Agent header sent to servers' -x
complete -c ringdl -l 'load-cookies' -d 'Load cookies from FILE (Firefox 3 or Netscape/Mozilla format)' -r -F
complete -c ringdl -l 'save-cookies' -d 'Save cookies to FILE in Netscape/Mozilla format' -r -F
complete -c ringdl -l 'enable-http-keep-alive' -d 'Keep HTTP/1.1 connections open for reuse' -f -a 'true false'
complete -c ringdl -l 'enable-http-pipelining' -d 'Send pipelined HTTP/1.1 requests' -f -a 'true false'
complete -c ringdl -l 'header' -d 'Extra request header; may be given several times' -x
complete -c ringdl -l 'certificate' -d 'Client certificate (PEM) to present to HTTPS servers' -r -F
complete -c ringdl -l 'private-key' -d 'Unencrypted PEM private key for --certificate' -r -F
complete -c ringdl -l 'ca-certificate' -d 'PEM file of certificate authorities to trust instead of the system\'s' -r -F
complete -c ringdl -l 'check-certificate' -d 'Verify the server\'s certificate against the trusted authorities' -f -a 'true false'
complete -c ringdl -l 'use-head' -d 'Make the first request to a server a HEAD request' -f -a 'true false'
complete -c ringdl -l 'http-auth-challenge' -d 'Send HTTP credentials only once the server asks for them' -f -a 'true false'
complete -c ringdl -l 'http-no-cache' -d 'Ask for a fresh copy with Cache-Control and Pragma: no-cache' -f -a 'true false'
complete -c ringdl -l 'no-want-digest-header' -d 'Leave the Want-Digest header out of requests' -f -a 'true false'
complete -c ringdl -l 'http-accept-gzip' -d 'Accept gzip or deflate encoded responses and decode them' -f -a 'true false'
complete -c ringdl -l 'content-disposition-default-utf8' -d 'Read quoted Content-Disposition file names as UTF-8' -f -a 'true false'
complete -c ringdl -l 'http-proxy' -d 'Proxy for HTTP downloads' -x
complete -c ringdl -l 'https-proxy' -d 'Proxy for HTTPS downloads' -x
complete -c ringdl -l 'ftp-proxy' -d 'Proxy for FTP downloads' -x
complete -c ringdl -l 'all-proxy' -d 'Proxy for every protocol' -x
complete -c ringdl -l 'no-proxy' -d 'Hosts, domains and networks reached without a proxy, comma-separated' -x
complete -c ringdl -l 'proxy-method' -d 'How requests pass a proxy: get or tunnel' -x -a 'get tunnel'
complete -c ringdl -l 'http-proxy-user' -d 'User name for --http-proxy' -x
complete -c ringdl -l 'http-proxy-passwd' -d 'Password for --http-proxy' -x
complete -c ringdl -l 'https-proxy-user' -d 'User name for --https-proxy' -x
complete -c ringdl -l 'https-proxy-passwd' -d 'Password for --https-proxy' -x
complete -c ringdl -l 'ftp-proxy-user' -d 'User name for --ftp-proxy' -x
complete -c ringdl -l 'ftp-proxy-passwd' -d 'Password for --ftp-proxy' -x
complete -c ringdl -l 'all-proxy-user' -d 'User name for --all-proxy' -x
complete -c ringdl -l 'all-proxy-passwd' -d 'Password for --all-proxy' -x
complete -c ringdl -s 'S' -l 'show-files' -d 'List the files in a .torrent, .meta4 or .metalink file and exit' -f -a 'true false'
complete -c ringdl -l 'max-overall-upload-limit' -d 'Cap on the total upload speed in bytes/s; 0 means no cap' -x
complete -c ringdl -s 'u' -l 'max-upload-limit' -d 'Cap on each torrent\'s upload speed in bytes/s; 0 means no cap' -x
complete -c ringdl -s 'T' -l 'torrent-file' -d 'Path of a .torrent file to download' -r -F
complete -c ringdl -l 'listen-port' -d 'TCP ports for BitTorrent, such as 6881,6885 or 6881-6999' -x
complete -c ringdl -l 'follow-torrent' -d 'What to do with a downloaded .torrent: true, mem or false' -x -a 'true mem false'
complete -c ringdl -l 'select-file' -d 'Indexes of the files to download, such as 3,6 or 1-5' -x
complete -c ringdl -l 'seed-time' -d 'Minutes to keep seeding after completion (fractions allowed)' -x
complete -c ringdl -l 'seed-ratio' -d 'Keep seeding until the share ratio reaches RATIO' -x
complete -c ringdl -l 'peer-id-prefix' -d 'Start of the 20-byte BitTorrent peer ID' -x
complete -c ringdl -l 'peer-agent' -d 'Client name sent in the BitTorrent extended handshake' -x
complete -c ringdl -l 'enable-peer-exchange' -d 'Use the BitTorrent Peer Exchange extension' -f -a 'true false'
complete -c ringdl -l 'enable-dht' -d 'Use the IPv4 DHT and UDP trackers' -f -a 'true false'
complete -c ringdl -l 'dht-listen-port' -d 'UDP ports for the DHT and UDP trackers, such as 6881,6885 or 6881-6999' -x
complete -c ringdl -l 'dht-entry-point' -d 'HOST:PORT to join the IPv4 DHT through' -x
complete -c ringdl -l 'dht-file-path' -d 'File holding the IPv4 DHT routing table' -r -F
complete -c ringdl -l 'enable-dht6' -d 'Use the IPv6 DHT' -f -a 'true false'
complete -c ringdl -l 'dht-listen-addr6' -d 'Global unicast IPv6 address for the IPv6 DHT socket' -x
complete -c ringdl -l 'dht-entry-point6' -d 'HOST:PORT to join the IPv6 DHT through' -x
complete -c ringdl -l 'dht-file-path6' -d 'File holding the IPv6 DHT routing table' -r -F
complete -c ringdl -l 'bt-min-crypto-level' -d 'Weakest peer encryption accepted: plain or arc4' -x -a 'plain arc4'
complete -c ringdl -l 'bt-require-crypto' -d 'Refuse the legacy BitTorrent handshake; always obfuscate' -f -a 'true false'
complete -c ringdl -l 'bt-request-peer-speed-limit' -d 'Look for more peers while the total speed is below SPEED' -x
complete -c ringdl -l 'bt-max-open-files' -d 'Most files open at once over all multi-file downloads' -x
complete -c ringdl -l 'bt-seed-unverified' -d 'Seed files downloaded earlier without checking their piece hashes' -f -a 'true false'
complete -c ringdl -l 'bt-hash-check-seed' -d 'Keep seeding when a --check-integrity check finds the file complete' -f -a 'true false'
complete -c ringdl -l 'bt-max-peers' -d 'Most peers per torrent; 0 means no limit' -x
complete -c ringdl -l 'bt-external-ip' -d 'IP address to report to trackers and the DHT' -x
complete -c ringdl -s 'O' -l 'index-out' -d 'Save the file with index INDEX as PATH, relative to --dir' -x
complete -c ringdl -l 'bt-tracker-interval' -d 'Seconds between tracker requests; 0 lets the tracker decide' -x
complete -c ringdl -l 'bt-stop-timeout' -d 'Stop a torrent after SEC seconds at zero speed; 0 disables' -x
complete -c ringdl -l 'bt-prioritize-piece' -d 'Fetch the first and/or last pieces of each file first' -x
complete -c ringdl -l 'bt-save-metadata' -d 'Save magnet-link metadata as a .torrent file next to the download' -f -a 'true false'
complete -c ringdl -l 'bt-metadata-only' -d 'Fetch only a magnet link\'s metadata, not its files' -f -a 'true false'
complete -c ringdl -l 'bt-enable-lpd' -d 'Find peers on the local network (Local Peer Discovery)' -f -a 'true false'
complete -c ringdl -l 'bt-lpd-interface' -d 'Interface or IP address for Local Peer Discovery' -x
complete -c ringdl -l 'bt-tracker-timeout' -d 'Seconds without data before a tracker request is given up' -x
complete -c ringdl -l 'bt-tracker-connect-timeout' -d 'Seconds allowed to connect to a tracker' -x
complete -c ringdl -l 'dht-message-timeout' -d 'Seconds to wait for a DHT reply' -x
complete -c ringdl -l 'on-bt-download-complete' -d 'Run COMMAND when a torrent completes, before seeding' -r -F
complete -c ringdl -l 'bt-tracker' -d 'Extra tracker announce URIs, comma-separated' -x
complete -c ringdl -l 'bt-exclude-tracker' -d 'Tracker announce URIs to drop, comma-separated; \'*\' drops them all' -x
complete -c ringdl -l 'bt-remove-unselected-file' -d 'When a torrent completes, delete files not chosen by --select-file' -f -a 'true false'
complete -c ringdl -l 'bt-detach-seed-only' -d 'Do not count torrents that are only seeding against -j' -f -a 'true false'
complete -c ringdl -l 'bt-force-encryption' -d 'Require encrypted peer connections (arc4)' -f -a 'true false'
complete -c ringdl -l 'bt-enable-hook-after-hash-check' -d 'Run --on-bt-download-complete after a passing -V hash check' -f -a 'true false'
complete -c ringdl -l 'bt-load-saved-metadata' -d 'Load metadata saved by --bt-save-metadata before asking the DHT' -f -a 'true false'
complete -c ringdl -s 'M' -l 'metalink-file' -d 'Path of a .meta4 or .metalink file to download; \'-\' reads standard input' -r -F
complete -c ringdl -l 'metalink-version' -d 'Version of the file to pick from a Metalink' -x
complete -c ringdl -l 'metalink-language' -d 'Language of the file to pick from a Metalink' -x
complete -c ringdl -l 'metalink-os' -d 'Operating system of the file to pick from a Metalink' -x
complete -c ringdl -l 'metalink-location' -d 'Preferred server locations, comma-separated (such as jp,us)' -x
complete -c ringdl -l 'follow-metalink' -d 'What to do with a downloaded Metalink: true, mem or false' -x -a 'true mem false'
complete -c ringdl -l 'metalink-preferred-protocol' -d 'Protocol to prefer among Metalink mirrors: http, https, ftp, none' -x -a 'http https ftp none'
complete -c ringdl -l 'metalink-enable-unique-protocol' -d 'Use only one protocol of a Metalink mirror that offers several' -f -a 'true false'
complete -c ringdl -l 'metalink-base-uri' -d 'Base URI for relative URLs in a local Metalink file' -x
complete -c ringdl -l 'engine' -d 'Which reactor runs the downloads: io_uring, or the portable epoll one' -x -a 'auto uring portable'
if not command -q aria2c
    complete -c aria2c --wraps ringdl
end
