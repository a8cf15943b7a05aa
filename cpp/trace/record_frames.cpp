#include "trace/record_frames.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "trace/trace_reader.h"
#include "trace/value.h"

namespace traincheck {

namespace {

constexpr char kKeysFrame = 'K';
constexpr char kRecordFrame = 'R';
constexpr size_t kFrameHeader = 1 + sizeof(uint32_t);

enum Tag : uint8_t { kNull = 0, kFalse = 1, kTrue = 2, kInt = 3, kDouble = 4, kString = 5, kJson = 6 };

template <typename T>
void put(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out.append(bytes, sizeof(T));
}

template <typename T>
void patch(std::string& out, size_t at, T v) {
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void put_text(std::string& out, std::string_view text) {
  put<uint32_t>(out, static_cast<uint32_t>(text.size()));
  out.append(text);
}

// Reads the frames of a sequence in order; a cursor over bytes that says where it failed.
class FrameReader {
 public:
  explicit FrameReader(std::string_view text) : text_(text) {}
  bool done() const { return at_ >= text_.size(); }
  size_t at() const { return at_; }
  // The next frame's kind and payload; false when the header or the payload runs past the end (`kind`
  // is set when there is a byte left).
  bool next(char& kind, std::string_view& payload) {
    if (done()) return false;
    kind = text_[at_];
    if (text_.size() - at_ < kFrameHeader) return false;
    uint32_t size = 0;
    std::memcpy(&size, text_.data() + at_ + 1, sizeof size);
    if (text_.size() - at_ - kFrameHeader < size) return false;
    payload = text_.substr(at_ + kFrameHeader, size);
    at_ += kFrameHeader + size;
    return true;
  }

 private:
  std::string_view text_;
  size_t at_ = 0;
};

// Reads fixed-size numbers and strings from one frame's payload.
class PayloadReader {
 public:
  explicit PayloadReader(std::string_view payload) : p_(payload) {}
  template <typename T>
  bool read(T& v) {
    if (p_.size() - at_ < sizeof(T)) return false;
    std::memcpy(&v, p_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }
  template <typename Length>
  bool read_text(std::string_view& text) {
    Length n = 0;
    if (!read(n) || p_.size() - at_ < n) return false;
    text = p_.substr(at_, n);
    at_ += n;
    return true;
  }
  bool done() const { return at_ == p_.size(); }

 private:
  std::string_view p_;
  size_t at_ = 0;
};

}  // namespace

RecordFrameEncoder::RecordFrameEncoder(const std::vector<KeyId>& kept) {
  key_frame_ += kKeysFrame;
  put<uint32_t>(key_frame_, 0);
  put<uint16_t>(key_frame_, 0);
  uint16_t count = 0;
  for (KeyId key : kept) {
    if (key < index_of_.size() && index_of_[key] >= 0) continue;  // named twice
    if (key >= index_of_.size()) index_of_.resize(key + 1, -1);
    const std::string_view name = key_name(key);
    if (count == std::numeric_limits<uint16_t>::max() || name.size() > std::numeric_limits<uint16_t>::max()) continue;
    index_of_[key] = count++;
    put<uint16_t>(key_frame_, static_cast<uint16_t>(name.size()));
    key_frame_.append(name);
  }
  patch<uint32_t>(key_frame_, 1, static_cast<uint32_t>(key_frame_.size() - kFrameHeader));
  patch<uint16_t>(key_frame_, kFrameHeader, count);
}

namespace {

void append_value(std::string& out, const Value& v) {
  switch (v.kind()) {
    case ValueKind::Null: out += static_cast<char>(kNull); break;
    case ValueKind::Bool: out += static_cast<char>(v.as_bool() ? kTrue : kFalse); break;
    case ValueKind::Int: out += static_cast<char>(kInt), put<int64_t>(out, v.as_int()); break;
    case ValueKind::Double: out += static_cast<char>(kDouble), put<double>(out, v.as_double()); break;
    case ValueKind::String: out += static_cast<char>(kString), put_text(out, v.as_string()); break;
    case ValueKind::Array:
    case ValueKind::Object: out += static_cast<char>(kJson), put_text(out, to_json(v)); break;
  }
}

}  // namespace

uint16_t RecordFrameEncoder::append_fields(std::string& out, const Field* begin, const Field* end) const {
  uint16_t count = 0;
  for (const Field* f = begin; f != end; ++f) {
    if (f->key >= index_of_.size() || index_of_[f->key] < 0) continue;
    ++count;
    put<uint16_t>(out, static_cast<uint16_t>(index_of_[f->key]));
    append_value(out, f->value);
  }
  return count;
}

void RecordFrameEncoder::append_record(std::string& out, const Record& r) const {
  const size_t start = out.size();
  out += kRecordFrame;
  put<uint32_t>(out, 0);
  put<uint16_t>(out, 0);
  uint16_t fields = 0;
  r.for_each_field([&](const Field& f) { fields += append_fields(out, &f, &f + 1); });
  patch<uint32_t>(out, start + 1, static_cast<uint32_t>(out.size() - start - kFrameHeader));
  patch<uint16_t>(out, start + kFrameHeader, fields);
}

void RecordFrameEncoder::append_frame(std::string& out, const Field* begin, const Field* end, std::string_view encoded,
                                      uint16_t encoded_count) const {
  const size_t start = out.size();
  out += kRecordFrame;
  put<uint32_t>(out, 0);
  put<uint16_t>(out, 0);
  const uint16_t fields = append_fields(out, begin, end);
  out.append(encoded);
  patch<uint32_t>(out, start + 1, static_cast<uint32_t>(out.size() - start - kFrameHeader));
  patch<uint16_t>(out, start + kFrameHeader, static_cast<uint16_t>(fields + encoded_count));
}

std::vector<std::string> chunk_record_frames(std::string_view sequence, size_t max_bytes, uint64_t& too_large) {
  std::vector<std::string> out;
  std::string_view keys;
  FrameReader frames(sequence);
  char kind = 0;
  std::string_view payload;
  while (!frames.done()) {
    const size_t from = frames.at();
    if (!frames.next(kind, payload)) break;  // our own encoding: never happens
    const std::string_view frame = sequence.substr(from, frames.at() - from);
    if (kind == kKeysFrame) {
      keys = frame;
      continue;
    }
    if (keys.size() + frame.size() > max_bytes) {
      ++too_large;
      continue;
    }
    if (out.empty() || out.back().size() + frame.size() > max_bytes) out.emplace_back(keys);
    out.back().append(frame);
  }
  return out;
}

size_t count_record_frames(std::string_view sequence) {
  size_t n = 0;
  FrameReader frames(sequence);
  char kind = 0;
  std::string_view payload;
  while (!frames.done() && frames.next(kind, payload)) n += kind == kRecordFrame;
  return n;
}

bool RecordFrameDecoder::decode(std::string_view sequence, std::vector<Record>& out, std::string& error) {
  FrameReader frames(sequence);
  char kind = 0;
  std::string_view payload;
  bool keys_read = false;  // each sequence, and each chunk of one, names its keys first
  bool all_read = true;
  std::string what;
  while (!frames.done()) {
    const size_t at = frames.at();
    auto note = [&](const std::string& why) {
      if (all_read) error = "at byte " + std::to_string(at) + ": " + why;  // the first one
      all_read = false;
    };
    const bool whole = frames.next(kind, payload);
    if (kind != kKeysFrame && kind != kRecordFrame) {
      note("unknown frame kind " + std::to_string(static_cast<unsigned char>(kind)) +
           " (written by another build of traincheck?)");
      break;  // where the next frame starts is unknown
    }
    if (!whole) {
      note("a frame runs past the end");
      break;
    }
    if (kind == kKeysFrame) {
      keys_read = read_keys(payload, what);
      if (!keys_read) note(what);  // the records up to the next key frame are unreadable
    } else if (!keys_read) {
      note("a record without a key frame before it");
    } else {
      Record r;
      if (read_record(payload, r, what)) {
        out.push_back(std::move(r));
      } else {
        note(what);  // that record only: the next frame starts where its length says
      }
    }
  }
  return all_read;
}

bool RecordFrameDecoder::read_keys(std::string_view frame, std::string& error) {
  if (!key_frame_.empty() && frame == key_frame_) return true;  // every sequence and chunk repeats it
  PayloadReader in(frame);
  uint16_t count = 0;
  std::vector<KeyId> keys;
  if (!in.read(count)) return error = "key frame: no count", false;
  for (uint16_t i = 0; i < count; ++i) {
    std::string_view name;
    if (!in.read_text<uint16_t>(name)) return error = "key frame: key " + std::to_string(i) + " runs past the frame", false;
    keys.push_back(intern_key(name));
  }
  if (!in.done()) return error = "key frame: bytes after its keys", false;
  keys_ = std::move(keys);
  last_string_.assign(keys_.size(), Value());
  key_frame_.assign(frame);
  return true;
}

bool RecordFrameDecoder::read_record(std::string_view frame, Record& r, std::string& error) {
  PayloadReader in(frame);
  uint16_t count = 0;
  if (!in.read(count)) return error = "record: no field count", false;
  r.fields.reserve(std::min<size_t>(count, frame.size() / 3));  // a field takes 3 bytes at least: the count is untrusted
  bool sorted = true;
  for (uint16_t i = 0; i < count; ++i) {
    uint16_t index = 0;
    uint8_t tag = 0;
    if (!in.read(index) || !in.read(tag)) return error = "record: field " + std::to_string(i) + " runs past the frame", false;
    if (index >= keys_.size()) return error = "record: key index " + std::to_string(index) + " not in the key frame", false;
    Value v;
    int64_t i64 = 0;
    double d = 0;
    std::string_view text;
    switch (tag) {
      case kNull: break;
      case kFalse: v = Value::boolean(false); break;
      case kTrue: v = Value::boolean(true); break;
      case kInt:
        if (!in.read(i64)) return error = "record: a number runs past the frame", false;
        v = Value::integer(i64);
        break;
      case kDouble:
        if (!in.read(d)) return error = "record: a number runs past the frame", false;
        v = Value::real(d);
        break;
      case kString: {
        if (!in.read_text<uint32_t>(text)) return error = "record: a string runs past the frame", false;
        // Most string fields hold what the record before held (its type, var type, stage): compared,
        // not looked up.
        Value& last = last_string_[index];
        if (!last.is_string() || last.as_string() != text) last = parser_.string_value(text);
        v = last;
        break;
      }
      case kJson:
        if (!in.read_text<uint32_t>(text)) return error = "record: a value runs past the frame", false;
        if (!parser_.parse(text, v, error))
          return error = "record: field '" + std::string(key_name(keys_[index])) + "': not JSON (" + error + ")", false;
        break;
      default: return error = "record: unknown value tag " + std::to_string(tag), false;
    }
    const KeyId key = keys_[index];
    if (!r.fields.empty() && r.fields.back().key >= key) sorted = false;
    r.fields.push_back({key, std::move(v)});
  }
  if (!in.done()) return error = "record: bytes after its fields", false;
  if (!sorted) {
    std::sort(r.fields.begin(), r.fields.end(), [](const Field& a, const Field& b) { return a.key < b.key; });
    for (size_t i = 1; i < r.fields.size(); ++i)
      if (r.fields[i].key == r.fields[i - 1].key)
        return error = "record: field '" + std::string(key_name(r.fields[i].key)) + "' twice", false;
  }
  return validate_trace_record(r, error);
}

}  // namespace traincheck
