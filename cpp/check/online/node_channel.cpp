#include "check/online/node_channel.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace traincheck {

namespace {

std::runtime_error file_error(const std::string& what, const std::string& path) {
  return std::runtime_error("node channel: " + what + " " + path + ": " + std::strerror(errno));
}

std::string mark_key(int local_rank) { return "left/r" + std::to_string(local_rank); }

}  // namespace

std::string FilePeerStore::path_of(const std::string& key) const {
  // Keys hold '/' (s<step>/r<rank>): escaped, so that every key is one file of the directory.
  std::string name;
  for (char c : key) {
    if (c == '/') name += "%2F";
    else if (c == '%') name += "%25";
    else name += c;
  }
  return dir_ + "/" + name;
}

std::string FilePeerStore::write_temporary(const std::string& value) const {
  std::string path = dir_ + "/.tmp-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) throw file_error("cannot create a file in", dir_);
  size_t done = 0;
  while (done < value.size()) {
    const ssize_t n = ::write(fd, value.data() + done, value.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::runtime_error e = file_error("cannot write", path);
      ::close(fd);
      ::unlink(path.c_str());
      throw e;
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return path;
}

void FilePeerStore::multi_set(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string tmp = write_temporary(values.at(i));
    const std::string path = path_of(keys[i]);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      const std::runtime_error e = file_error("cannot write", path);
      ::unlink(tmp.c_str());
      throw e;
    }
  }
}

bool FilePeerStore::check(const std::vector<std::string>& keys) {
  for (const std::string& k : keys) {
    const std::string path = path_of(k);
    if (::access(path.c_str(), F_OK) == 0) continue;
    if (errno == ENOENT) return false;
    throw file_error("cannot look up", path);
  }
  return true;
}

std::vector<std::string> FilePeerStore::multi_get(const std::vector<std::string>& keys) {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const std::string& k : keys) {
    const std::string path = path_of(k);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw file_error("cannot read", path);  // deleted since check(): the caller counts it
    std::string& value = out.emplace_back();
    char buffer[1 << 16];
    while (true) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const std::runtime_error e = file_error("cannot read", path);
        ::close(fd);
        throw e;
      }
      if (n == 0) break;
      value.append(buffer, static_cast<size_t>(n));
    }
    ::close(fd);
  }
  return out;
}

void FilePeerStore::erase(const std::string& key) {
  const std::string path = path_of(key);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) throw file_error("cannot delete", path);
}

std::string FilePeerStore::set_if_absent(const std::string& key, const std::string& value) {
  const std::string tmp = write_temporary(value);
  const std::string path = path_of(key);
  const int linked = ::link(tmp.c_str(), path.c_str());
  const int link_errno = errno;
  ::unlink(tmp.c_str());
  if (linked == 0) return value;
  errno = link_errno;
  if (link_errno != EEXIST) throw file_error("cannot write", path);
  return multi_get({key}).at(0);
}

std::string node_channel_key(int node) { return "node/n" + std::to_string(node); }

std::string default_node_channel_root() {
  struct stat st{};
  if (::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && ::access("/dev/shm", W_OK) == 0) return "/dev/shm";
  std::error_code ec;
  const std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  return ec ? std::string("/tmp") : tmp.string();
}

NodeChannel::NodeChannel(PeerStore& job, int node, int local_rank, int local_world, std::string root)
    : job_(job), node_(node), local_rank_(local_rank), local_world_(local_world), root_(std::move(root)) {}

std::unique_ptr<FilePeerStore> NodeChannel::open() {
  const std::string key = node_channel_key(node_);
  if (local_rank_ == 0) {
    if (dir_.empty()) {
      std::string dir = root_ + "/traincheck-node" + std::to_string(node_) + "-XXXXXX";
      if (::mkdtemp(dir.data()) == nullptr) throw file_error("cannot create a directory under", root_);
      dir_ = dir;
    }
    job_.multi_set({key}, {dir_});  // again at the next try if it threw
  } else if (dir_.empty()) {
    if (!job_.check({key})) return nullptr;
    dir_ = job_.multi_get({key}).at(0);
  }
  struct stat st{};
  if (::stat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw std::runtime_error("node channel: node " + std::to_string(node_) + "'s directory " + dir_ +
                             " (from its leader) is not a directory on this machine");
  return std::make_unique<FilePeerStore>(dir_, PeerGroup{local_rank_, local_world_});
}

void NodeChannel::leave() {
  if (dir_.empty()) return;
  try {
    FilePeerStore files(dir_, PeerGroup{local_rank_, local_world_});
    files.multi_set({mark_key(local_rank_)}, {"1"});
    std::vector<std::string> marks;
    for (int r = 0; r < local_world_; ++r) marks.push_back(mark_key(r));
    if (!files.check(marks)) return;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);  // another rank may be removing it too
  } catch (const std::exception&) {
    // The directory is gone already, or unwritable: nothing of the job depends on it any more.
  }
}

}  // namespace traincheck
