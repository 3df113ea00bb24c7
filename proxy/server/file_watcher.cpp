#include "proxy/server/file_watcher.hpp"

#include <spdlog/spdlog.h>
#include <sys/inotify.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

namespace sluice::server {
namespace {

/// A link renamed over (ConfigMap, Secret, `mv`), a file written and closed, created, removed
/// or its permissions changed; IN_MODIFY too, so that a writer that keeps the file open delays
/// the reload until it is quiet.
constexpr std::uint32_t kDirectoryEvents = IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM |
                                           IN_CLOSE_WRITE | IN_DELETE | IN_ATTRIB | IN_MODIFY |
                                           IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) {
    text += (text.empty() ? "" : ", ") + name;
  }
  return text;
}

}  // namespace

FileWatcher::FileWatcher(live::Reloader& reloader, const live::LiveConfig& live)
    : reloader_(reloader), live_(live) {
  const int descriptor = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (descriptor < 0) {
    spdlog::error("watch: inotify: {}; files are not watched", std::strerror(errno));
  } else {
    inotify_.assign(descriptor);
    read_events();
  }
  follow_live();
  tick();
  thread_ = std::thread([this] { io_.run(); });
}

FileWatcher::~FileWatcher() {
  io_.stop();
  thread_.join();
}

void FileWatcher::read_events() {
  inotify_.async_read_some(
      net::buffer(events_), [this](const boost::system::error_code& ec, std::size_t size) {
        if (ec) {
          if (ec != net::error::operation_aborted) {
            spdlog::error("watch: reading inotify events: {}; files are no longer watched",
                          ec.message());
          }
          return;
        }
        for (std::size_t at = 0; at + sizeof(inotify_event) <= size;) {
          inotify_event event;
          std::memcpy(&event, events_.data() + at, sizeof event);
          if ((event.mask & IN_IGNORED) != 0) {  // the directory went, or we stopped watching it
            const int gone = event.wd;
            std::erase_if(directories_, [gone](const auto& entry) { return entry.second == gone; });
          }
          at += sizeof(inotify_event) + event.len;
        }
        changed();
        read_events();
      });
}

void FileWatcher::changed() {
  const auto now = std::chrono::steady_clock::now();
  if (!pending_) {
    pending_ = true;
    first_change_ = now;
  }
  quiet_.expires_at(std::min(now + kWatchQuiet, first_change_ + kWatchLongest));
  quiet_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) {
      settle();
    }
  });
}

void FileWatcher::settle() {
  pending_ = false;
  live::FileStamps now = live::restamp(stamps_);
  if (const std::vector<std::string> changed = live::changed_files(stamps_, now);
      !changed.empty()) {
    stamps_ = std::move(now);
    spdlog::info("watch: {} changed", joined(changed));
    reloader_.reload("watch");
  }
  follow_live();
}

void FileWatcher::follow_live() {
  version_ = live_.version();
  const std::vector<std::string> files = live::watched_files(*live_.current()->config);
  live::FileStamps stamps;
  for (const std::string& file : files) {
    const auto known = stamps_.find(file);
    stamps.emplace(file, known != stamps_.end() ? known->second : live::stamp_of(file));
  }
  stamps_ = std::move(stamps);
  if (!inotify_.is_open()) {
    return;
  }
  const std::vector<std::string> wanted = live::watched_directories(files);
  for (auto entry = directories_.begin(); entry != directories_.end();) {
    if (std::find(wanted.begin(), wanted.end(), entry->first) != wanted.end()) {
      ++entry;
      continue;
    }
    const int watch = entry->second;
    entry = directories_.erase(entry);
    // Two paths to one directory share its watch: it goes with the last of them.
    if (std::none_of(directories_.begin(), directories_.end(),
                     [&](const auto& other) { return other.second == watch; })) {
      ::inotify_rm_watch(inotify_.native_handle(), watch);
    }
  }
  for (const std::string& directory : wanted) {
    if (directories_.contains(directory)) {
      continue;
    }
    const int watch =
        ::inotify_add_watch(inotify_.native_handle(), directory.c_str(), kDirectoryEvents);
    if (watch < 0) {  // tried again after the next change or reload
      spdlog::warn("watch: cannot watch {}: {}", directory, std::strerror(errno));
      continue;
    }
    directories_.emplace(directory, watch);
  }
}

void FileWatcher::tick() {
  tick_.expires_after(kWatchTick);
  tick_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) {
      return;
    }
    if (live_.version() != version_) {
      follow_live();
    }
    tick();
  });
}

}  // namespace sluice::server
