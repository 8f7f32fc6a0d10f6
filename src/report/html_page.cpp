#include "report/html_page.h"

namespace dlakit::report {

extern const char* const kReportCss;
extern const char* const kReportJs;

std::string escape_html(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else if (c == '"')
      o += "&quot;";
    else if (c == '\'')
      o += "&#39;";
    else
      o += c;
  }
  return o;
}

std::string html_page(const nlohmann::json& page, const std::string& extra_html) {
  // '<' only occurs inside JSON strings, where \u003c means the same: the data cannot close its tag.
  std::string data;
  for (char c : page.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
    data += c == '<' ? std::string("\\u003c") : std::string(1, c);
  std::string h;
  h += "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>";
  h += "<meta name='viewport' content='width=device-width, initial-scale=1'>";
  h += "<title>" + escape_html(page.value("title", std::string("dlakit report"))) + "</title>";
  // Errors are recorded on the page itself first, so a test (or a reader) sees them even without a console.
  h += "<script>addEventListener('error',function(e){var d=document.documentElement;"
       "d.setAttribute('data-errors',(d.getAttribute('data-errors')||'')+e.message+'; ');});</script>";
  h += "<style>" + std::string(kReportCss) + "</style></head><body>\n";
  h += "<header id='top'></header>\n<main><div id='left'><section id='controls'></section>"
       "<section id='network'></section><section id='tables'></section>\n";
  h += "<section id='extra'>" + extra_html + "</section></div>\n<aside id='details'></aside></main>\n";
  h += "<script type='application/json' id='report-data'>" + data + "</script>\n";
  h += "<script>" + std::string(kReportJs) + "</script>\n</body></html>\n";
  return h;
}

}  // namespace dlakit::report
