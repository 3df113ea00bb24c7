#pragma once

#include <array>
#include <boost/asio/posix/basic_stream_descriptor.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "proxy/io/net.hpp"
#include "proxy/live/reloader.hpp"
#include "proxy/live/watched_files.hpp"

namespace sluice::server {

/// How long the watched files must stay quiet before a reload: a `kubectl apply`, an editor's
/// save or a certificate renewal writes several files or the same one several times.
inline constexpr std::chrono::milliseconds kWatchQuiet{300};
/// The longest a reload waits after the first change, however busy the directories stay (a
/// watched file may share its directory with files that change all the time).
inline constexpr std::chrono::milliseconds kWatchLongest{2000};
/// How often the watcher looks for a generation it did not load itself (SIGHUP, POST /reload):
/// a configuration may turn `watch` on, or name other files.
inline constexpr std::chrono::seconds kWatchTick{1};

/// `watch: true` (SPEC §10): reloads the configuration when the configuration file, or a
/// certificate, key or JWKS file it names, changes on disk; Linux only (inotify). Watches their
/// directories, not the files, so that a Kubernetes ConfigMap or Secret swapping its `..data`
/// link counts. Reloads only when a file's content changed (live::FileStamp), kWatchQuiet after
/// the last change (at most kWatchLongest after the first), through the Reloader with the
/// trigger "watch", so as SIGHUP: a file that does not load keeps the configuration in force and
/// becomes the Reloader's last report. After every reload it watches the files of the
/// configuration then in force, so `watch` itself applies at the reload that reads it.
///
/// Runs on a thread of its own: a reload reads files and may fetch key sets, which must not
/// hold up the event loops serving requests, and it needs no signal thread either, so the
/// process and tests build it alike.
class FileWatcher {
 public:
  /// Both must outlive it.
  FileWatcher(live::Reloader& reloader, const live::LiveConfig& live);
  FileWatcher(const FileWatcher&) = delete;
  FileWatcher& operator=(const FileWatcher&) = delete;
  FileWatcher(FileWatcher&&) = delete;
  FileWatcher& operator=(FileWatcher&&) = delete;
  ~FileWatcher();

 private:
  using Descriptor = net::posix::basic_stream_descriptor<io::Executor>;

  live::Reloader& reloader_;
  const live::LiveConfig& live_;
  net::io_context io_{1};
  Descriptor inotify_{io_};
  io::Timer quiet_{io_};
  io::Timer tick_{io_};
  /// Room for several events with their names (inotify's events are aligned to 4 bytes).
  alignas(4) std::array<char, 8192> events_{};
  std::map<std::string, int> directories_;  ///< Watched directory → its watch descriptor.
  live::FileStamps stamps_;                 ///< The watched files as last loaded or looked at.
  std::uint64_t version_ = 0;               ///< The generation `stamps_` are the files of.
  bool pending_ = false;                    ///< A change waits for quiet.
  std::chrono::steady_clock::time_point first_change_;
  std::thread thread_;

  void read_events();
  /// Something changed in a watched directory: (re)starts the wait for quiet.
  void changed();
  /// The wait is over: reloads if a watched file holds something new, then follows the files of
  /// the configuration in force.
  void settle();
  /// Watches the files of the configuration in force (none when it does not ask), keeping the
  /// stamps of those already watched.
  void follow_live();
  void tick();
};

}  // namespace sluice::server
