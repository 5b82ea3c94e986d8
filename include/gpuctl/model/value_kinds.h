// What each kind of inventory value may hold, in one place.
//
// Every inventory value ends up somewhere a stray character changes meaning:
// a line of /etc/hosts, /etc/exports, /etc/fstab or slurm.conf, a path on a
// node or under gpuctl's state directory, a shell command line. A line break
// in an NFS client spec is a second export line; `..` in the cluster name
// moves the journal out of the state directory. So each value is checked
// against what its destination accepts, by kind, before it is used, and the
// loaders report the problem at the value's file:line:column.
//
// Each `...Problem` function returns why `text` is not a value of its kind, or
// an empty string when it is one. A problem never quotes the value: it names
// the offending character ("a line break", "'$'"), so a hostile value cannot
// garble the message or the terminal that shows it. docs/inventory.md lists
// which key has which kind.
#pragma once

#include <string>
#include <string_view>

namespace gpuctl {

// How a character reads in a message: "a line break", "whitespace", "a NUL
// character", "a control character (0x1b)", "a non-ASCII character", "'$'".
std::string DescribeChar(char c);
// " 'text'" when `text` is short printable ASCII, safe to put in a message
// as it is; "" otherwise (the problem then names the culprit).
std::string ShownValue(std::string_view text);

// RFC 1123 host name: dot-separated labels of letters, digits and '-' (not at
// either end of a label), at most 63 characters a label, 253 in all, the last
// label not all digits. Node names, nfs.server, partition nodes.
std::string HostNameProblem(std::string_view text);
// An IPv4 address, an IPv6 address or a host name (node addresses, NTP
// servers).
std::string AddressProblem(std::string_view text);
// address/prefix, IPv4 or IPv6: "10.244.0.0/16", "fd00::/64".
std::string CidrProblem(std::string_view text);
// One client of an /etc/exports line (exports(5)): `*`, a host name, a
// wildcard host name (`*.lab.example`, `node?`), an IPv4 or IPv6 address, a
// network as CIDR or address/netmask, or `@netgroup`.
std::string NfsClientProblem(std::string_view text);
// A comma-separated list of mount or export options, each `name` or
// `name=value`: a name of letters, digits, '_', '-' and '.' starting with a
// letter or '_'; a value of letters, digits and `_-.:+@` (no '/', ',',
// spaces, quotes or shell characters).
std::string MountOptionsProblem(std::string_view text);
// An absolute path on a node: starts with '/', at most 4095 characters of
// letters, digits and `-._~/%+:@=,` (no whitespace, line breaks, control
// characters, quotes, `$`, backticks, `;`, `&`, `|`, `\`, `#`, `*`, `?`), no
// `..` component.
std::string AbsolutePathProblem(std::string_view text);
// A path on the machine running gpuctl (identity_file, known_hosts): any
// printable characters, relative or absolute, no line break or control
// character, at most 4095 characters.
std::string LocalPathProblem(std::string_view text);
// A time limit as slurm.conf takes it (MaxTime, DefaultTime): `UNLIMITED` or
// `INFINITE` (any case), or `minutes`, `minutes:seconds`,
// `hours:minutes:seconds`, `days-hours`, `days-hours:minutes` or
// `days-hours:minutes:seconds`, each a number of at most 7 digits; minutes
// and seconds after the first field below 60, hours after days below 24.
std::string SlurmTimeProblem(std::string_view text);
// A valid Slurm time in whole minutes, seconds rounded up as Slurm does; -1
// for UNLIMITED and INFINITE. Only for text SlurmTimeProblem accepts.
long long SlurmTimeMinutes(std::string_view text);
// A name Slurm takes for a partition, node or cluster: letters, digits, '_',
// '-' and '.', starting with a letter or digit, at most 64 characters.
std::string SlurmNameProblem(std::string_view text);
// The cluster's name, which names a directory of gpuctl's state
// (~/.local/state/gpuctl/<cluster>/): a single safe path component of
// letters, digits, '_', '-' and '.', starting with a letter or digit, at most
// 64 characters (so never "." or "..").
std::string ClusterNameProblem(std::string_view text);
// An InfiniBand/RDMA device as the kernel names it (`mlx5_0`, `mlx5_bond_0`,
// `irdma0`): letters, digits, '_', '-' and '.', starting with a letter, at
// most 64 characters.
std::string IbDeviceProblem(std::string_view text);
// A GPU model as nvidia-smi names it ("NVIDIA H100 80GB HBM3"): letters,
// digits, single spaces and `-_.()+`, starting with a letter or digit, at most
// 96 characters (NVML's name buffer). No quotes, commas, '/', `\` or line
// breaks: the model is compared inside an awk program and echoed in messages.
std::string GpuModelProblem(std::string_view text);
// A version or a version-like name ("12.4", "v24.3.0", "2.21.5-1",
// "flannel"): letters, digits and `.-_+~`, starting with a letter or digit, no
// "..", at most 64 characters.
std::string VersionProblem(std::string_view text);
// A pod network the catalog installs (k8s.cni): flannel. Anything else is
// refused at validate instead of failing k8s.cni's change on the master.
std::string CniProblem(std::string_view text);
// An NVIDIA driver as the inventory pins it: a branch (`550`) or an exact
// release as nvidia-smi reports it (`550.54.14`, three numbers). Digits and
// dots only: the branch names packages, the release is matched against
// package versions and nvidia-smi's driver_version.
std::string DriverVersionProblem(std::string_view text);
// A network interface name as Linux takes it (1-15 characters, IFNAMSIZ),
// here of letters, digits and `-_.` only, starting with a letter or digit.
std::string InterfaceNameProblem(std::string_view text);
// A kernel parameter as sysctl.d(5) names it (`vm.swappiness`,
// `net/ipv4/conf/eth0.100/rp_filter`): at least two components of lower-case
// letters, digits, '_' and '-' separated by '.' or '/' (a '/'-separated key
// may hold '.' inside a component, a VLAN interface's name), starting with a
// letter, no empty component, at most 255 characters. No glob (`*`).
std::string SysctlKeyProblem(std::string_view text);
// A kernel parameter's value as a line of /etc/sysctl.d/ takes it: one or
// more words separated by single spaces (`10`, `4096 87380 134217728`, `fq`,
// `32768 60999`), each of letters, digits and `-_.:/,+=@%`; no other
// whitespace, no line break, quote, `$`, backtick, `;`, `&`, `|`, `#`, `\`;
// at most 1024 characters.
std::string SysctlValueProblem(std::string_view text);
// A POSIX environment variable name: [A-Za-z_][A-Za-z0-9_]*, at most 128
// characters.
std::string EnvVarNameProblem(std::string_view text);
// A login name (ssh.user): letters, digits, '_', '-' and '.', starting with a
// letter, digit or '_', at most 32 characters.
std::string UserNameProblem(std::string_view text);
// An http:// or https:// URL with a host name or IPv4 address, an optional
// port and a path of the absolute-path characters; no credentials (user@), no
// `..` in the path, at most 2048 characters.
std::string UrlProblem(std::string_view text);
// A container image reference as Docker and containerd take it:
// [REGISTRY[:PORT]/]PATH[:TAG][@sha256:DIGEST]. PATH's components are
// lower-case letters and digits joined by '.', '_' or '-'; the registry is a
// host name (with a '.' or a port, or `localhost`); the tag is letters,
// digits, '_', '.' and '-' (not first), at most 128; the digest 64 lower-case
// hex digits. At most 512 characters.
std::string ImageReferenceProblem(std::string_view text);

}  // namespace gpuctl
