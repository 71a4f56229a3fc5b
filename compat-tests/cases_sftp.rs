//! `sftp://` against OpenSSH's sshd (a user with a password), as aria2c takes it: whole and split
//! downloads, the host key pinned with `--ssh-host-key-md`, a missing file, a wrong password, a
//! directory URI, and an SFTP mirror beside an HTTP one. ringdl adds a new host to known_hosts
//! with a NOTICE line aria2c does not print (K-SFTP).

use super::harness::{Case, Diff, Srv, R};

const ONE: &[R] = &[R::File("/f.bin", 3_000_001)];
const BIG: &[R] = &[R::File("/big.bin", 9 << 20)];

cases! {
    sftp_whole = Case {
        args: &["--ftp-user={sshuser}", "--ftp-passwd={sshpass}", "{sftp}/f.bin"],
        server: Srv::Sftp,
        routes: ONE,
        known: &["K-SFTP"],
        diffs: &[Diff::ExtraNotice("SSH host key")],
        ..Case::DEFAULT
    };
    sftp_split = Case {
        args: &["-x4", "-s4", "-k1M", "--ftp-user={sshuser}", "--ftp-passwd={sshpass}", "{sftp}/big.bin"],
        server: Srv::Sftp,
        routes: BIG,
        known: &["K-SFTP"],
        diffs: &[Diff::ExtraNotice("SSH host key")],
        ..Case::DEFAULT
    };
    sftp_host_key_md = Case {
        args: &["--ssh-host-key-md={sshmd}", "--ftp-user={sshuser}", "--ftp-passwd={sshpass}", "{sftp}/f.bin"],
        server: Srv::Sftp,
        routes: ONE,
        known: &["K-SFTP"],
        ..Case::DEFAULT
    };
    sftp_missing_file = Case {
        args: &["--ftp-user={sshuser}", "--ftp-passwd={sshpass}", "{sftp}/none.bin"],
        server: Srv::Sftp,
        routes: ONE,
        known: &["K-SFTP"],
        diffs: &[
            Diff::ExtraNotice("SSH host key"),
            Diff::Rewrite("failed: Failed opening remote file", "failed: No such file"),
        ],
        ..Case::DEFAULT
    };
    sftp_wrong_password = Case {
        args: &["--ftp-user={sshuser}", "--ftp-passwd=wrong", "{sftp}/f.bin"],
        server: Srv::Sftp,
        routes: ONE,
        known: &["K-SFTP"],
        diffs: &[
            Diff::ExtraNotice("SSH host key"),
            Diff::Rewrite(
                "Authentication failed (username/password)",
                "the server refused ringdltest's login (it takes: publickey,password)",
            ),
        ],
        ..Case::DEFAULT
    };
    sftp_directory_uri = Case {
        args: &["--ftp-user={sshuser}", "--ftp-passwd={sshpass}", "{sftp}/"],
        server: Srv::Sftp,
        routes: ONE,
        known: &["K-SFTP"],
        ..Case::DEFAULT
    };
    sftp_mirror_beside_http = Case {
        args: &["-s2", "-k1M", "{url}/big.bin", "--ftp-user={sshuser}", "--ftp-passwd={sshpass}", "{sftp}/big.bin"],
        server: Srv::Sftp,
        routes: BIG,
        known: &["K-SFTP"],
        diffs: &[Diff::ExtraNotice("SSH host key")],
        ..Case::DEFAULT
    };
    // Through an HTTP proxy's CONNECT tunnel, which aria2c takes for SFTP whatever the method.
    sftp_through_proxy = Case {
        args: &["--all-proxy={tunnel}", "--ftp-user={sshuser}", "--ftp-passwd={sshpass}", "{sftp}/f.bin"],
        server: Srv::Sftp,
        routes: ONE,
        known: &["K-SFTP"],
        diffs: &[Diff::ExtraNotice("SSH host key")],
        ..Case::DEFAULT
    };
}
