// /etc/os-release as a node prints it (the identify phase): parsed, mapped
// onto the inventory's OS names, and checked against an `auto` node and a
// declared one, including every message that quotes the file.
#include "fuzz_check.h"
#include "gpuctl/model/os_release.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using gpuctl::fuzz::Check;
  const auto file = gpuctl::ParseOsReleaseFile(gpuctl::fuzz::Text(data, size));
  (void)file.Describe();
  (void)file.IdLike();
  const auto identified = gpuctl::IdentifyOs(file);
  Check(identified.os.has_value() != !identified.error.empty(),
        "identifying an OS gives either an OS or a reason");
  if (identified.os) {
    const auto again = gpuctl::ParseOs(identified.os->Name());
    Check(again && again->Name() == identified.os->Name(), "an identified OS is a known name");
  }
  const auto checked_auto = gpuctl::CheckNodeOs(gpuctl::OsRelease::Auto(), file);
  Check(checked_auto.os.has_value() == identified.os.has_value(),
        "an auto node gets what the file identifies");
  const auto declared = gpuctl::ParseOs("rocky-9");
  Check(declared.has_value(), "rocky-9 is a known OS");
  const auto checked = gpuctl::CheckNodeOs(*declared, file);
  Check(!checked.os || checked.os->Name() == "rocky-9", "a declared OS is kept or refused");
  return 0;
}
