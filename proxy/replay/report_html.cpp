#include "proxy/replay/report_html.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "proxy/replay/replay_record.hpp"

namespace sluice::replay {
namespace {

std::string escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string utc(double seconds) {
  // fmt formats a time in nanoseconds: the end of a chart's last bucket may lie past 2262.
  seconds = std::clamp(seconds, -kMaxSeconds, kMaxSeconds);
  const auto t = std::chrono::sys_seconds(std::chrono::seconds(std::llround(seconds)));
  return fmt::format("{:%Y-%m-%d %H:%M:%S} UTC", t);
}

struct Series {
  const char* name;
  const char* colour;
  std::uint64_t Counts::*field;
};

constexpr Series kSeries[] = {
    {"allowed", "#2e7d32", &Counts::allowed},   {"delayed", "#f9a825", &Counts::delayed},
    {"limited", "#c62828", &Counts::limited},   {"denied", "#6d4c41", &Counts::denied},
    {"no route", "#90a4ae", &Counts::no_route}, {"unauthorized", "#5e35b1", &Counts::unauthorized}};

void chart(const ReplaySummary::Row& row, const ReplaySummary& summary, std::ostream& out) {
  constexpr double kWidth = 880;
  constexpr double kHeight = 160;
  std::uint64_t highest = 1;
  for (const Counts& bucket : row.buckets) {
    highest = std::max(highest, bucket.total());
  }
  const double bar = kWidth / static_cast<double>(std::max<std::size_t>(row.buckets.size(), 1));
  out << "<svg viewBox=\"0 0 " << kWidth << ' ' << kHeight + 20
      << "\" role=\"img\" aria-label=\"requests over time\">\n";
  for (std::size_t i = 0; i < row.buckets.size(); ++i) {
    double base = kHeight;
    for (const Series& series : kSeries) {
      const auto count = static_cast<double>(row.buckets[i].*series.field);
      if (count == 0) {
        continue;
      }
      const double height = count / static_cast<double>(highest) * kHeight;
      base -= height;
      out << fmt::format(
          "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\">"
          "<title>{}: {} {}</title></rect>\n",
          static_cast<double>(i) * bar, base, std::max(bar - 0.5, 0.5), height, series.colour,
          utc(summary.origin() + static_cast<double>(i) * summary.bucket_seconds()),
          static_cast<std::uint64_t>(count), series.name);
    }
  }
  out << fmt::format("<text x=\"0\" y=\"{}\" class=\"axis\">{}</text>\n", kHeight + 15,
                     utc(summary.origin()));
  out << fmt::format(
      "<text x=\"{}\" y=\"{}\" class=\"axis\" text-anchor=\"end\">{}</text>\n", kWidth,
      kHeight + 15,
      utc(summary.origin() + static_cast<double>(row.buckets.size()) * summary.bucket_seconds()));
  out << fmt::format("<text x=\"4\" y=\"12\" class=\"axis\">{} per {} s</text>\n", highest,
                     summary.bucket_seconds());
  out << "</svg>\n";
}

}  // namespace

void write_html_report(const ReplaySummary& summary, std::string_view config_file,
                       std::string_view input_name, std::ostream& out) {
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      << "<title>sluice replay: " << escape(input_name) << "</title>\n"
      << "<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:960px;color:#222}"
         "table{border-collapse:collapse;margin:1em 0}td,th{padding:2px 10px;text-align:right}"
         "td:first-child,th:first-child{text-align:left}tr:nth-child(even){background:#f4f4f4}"
         "svg{width:100%;height:auto;background:#fafafa;border:1px solid #ddd}"
         ".axis{font-size:10px;fill:#555}.key{display:inline-block;width:10px;height:10px;"
         "margin:0 4px 0 12px}</style></head><body>\n";
  out << "<h1>What " << escape(config_file) << " would have done</h1>\n<p>Replay of <code>"
      << escape(input_name) << "</code>.";
  for (const Series& series : kSeries) {
    out << "<span class=\"key\" style=\"background:" << series.colour << "\"></span>"
        << series.name;
  }
  out << "</p>\n<table><tr><th>route</th><th>requests</th><th>allowed</th><th>delayed</th>"
         "<th>limited</th><th>denied</th><th>no route</th><th>unauthorized</th>"
         "<th>shadow limited</th></tr>\n";
  for (const ReplaySummary::Row& row : summary.rows()) {
    if (row.totals.total() == 0) {
      continue;
    }
    const Counts& c = row.totals;
    out << fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td></tr>\n",
        escape(row.name), c.total(), c.allowed, c.delayed, c.limited, c.denied, c.no_route,
        c.unauthorized, c.shadow_limited);
  }
  out << "</table>\n";
  for (const ReplaySummary::Row& row : summary.rows()) {
    if (row.totals.total() == 0) {
      continue;
    }
    out << "<h2>" << escape(row.name) << "</h2>\n";
    chart(row, summary, out);
  }
  const auto top = summary.top_keys(20);
  if (!top.empty()) {
    out << "<h2>Most limited keys</h2>\n<table><tr><th>limiter and key</th><th>limited</th></tr>\n";
    for (const auto& [count, label] : top) {
      out << "<tr><td>" << escape(label) << "</td><td>" << count << "</td></tr>\n";
    }
    out << "</table>\n";
  }
  if (summary.malformed_lines() > 0) {
    out << "<p>" << summary.malformed_lines() << " malformed lines were skipped.</p>\n";
  }
  out << "</body></html>\n";
}

}  // namespace sluice::replay
