// traincheck-onlinecheck (docs/formats.md §traincheck-onlinecheck) as a function, so tests can run it
// in-process.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

namespace traincheck {

class OnlineChecker;
class TraceTailer;

// One poll of traincheck-onlinecheck's loop: what the tailer reads from every file goes to the checker,
// then end_batch. A backlog is read a chunk per file and poll; while a file is behind, records later
// than the last one it delivered wait (`horizon`, kept between calls), and files already past the
// horizon are not read further, so records of different files are still checked in time order and
// memory stays bounded. Returns the bytes read; the caller polls again at once while tailer.behind().
// `before_checking` runs between reading and checking: what must be known of a line's process before its
// records are judged, and was written before the line (api_signatures.json), is loaded there.
size_t poll_into_checker(TraceTailer& tailer, OnlineChecker& checker, std::optional<int64_t>& horizon,
                         const std::function<void(const std::string& message)>& warn,
                         const std::function<void()>& before_checking = {});

// Runs until `stop` becomes true (the CLI's SIGINT/SIGTERM handler sets it) or, with
// --exit-when-idle S, until no trace data arrived for S seconds. Returns the exit status: 0 after a
// normal stop, 1 on bad input (message on `err`), 2 on a bad command line.
int run_online_check_command(int argc, const char* const* argv, std::ostream& err, const std::atomic<bool>& stop);

}  // namespace traincheck
