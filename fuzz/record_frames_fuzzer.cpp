// libFuzzer target: the binary record frames of the cross-rank summaries (trace/record_frames.h) on
// arbitrary bytes: another rank's store value is untrusted input.
//
// The decoder must accept the input or reject it with a message; the records it accepted before
// stopping must have what every index relies on; and those records, encoded again with every key they
// hold, must read back the same. Anything else (a crash, a sanitizer report, an exception) is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "finding.h"
#include "trace/record.h"
#include "trace/record_frames.h"
#include "trace/value.h"

using namespace traincheck;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static RecordFrameDecoder decoder;  // reused across inputs, as the exchange reuses its own
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::vector<Record> records;
  std::string error;
  if (!decoder.decode(bytes, records, error) && error.empty()) fail("decode refused input without saying why");
  (void)count_record_frames(bytes);
  uint64_t too_large = 0;
  (void)chunk_record_frames(bytes, 256, too_large);
  for (const Record& r : records) {
    const Value* name = r.get(r.is_api() ? keys().function : keys().var_name);
    if (name == nullptr || !name->is_string()) fail("accepted record without its function or var_name");
    std::vector<KeyId> all;
    r.for_each_field([&](const Field& f) { all.push_back(f.key); });
    RecordFrameEncoder encoder(all);
    std::string again = encoder.key_frame();
    encoder.append_record(again, r);
    RecordFrameDecoder fresh;
    std::vector<Record> back;
    if (!fresh.decode(again, back, error) || back.size() != 1) fail("an accepted record, encoded again, is refused");
    if (!(back[0].to_value() == r.to_value()) && to_json(back[0].to_value()) != to_json(r.to_value()))
      fail("an accepted record, encoded again, reads back different");
  }
  return 0;
}
