#include "tools/skiff/train_flags.h"

#include <algorithm>

#include "skiff/log.h"
#include "tools/skiff/option_checks.h"

namespace skiff::cli {

void AddTrainFlags(CLI::App& app, TrainFlags* flags, const std::vector<std::string>& only) {
  const train::TrainOptions defaults;
  const std::vector<train::TrainOption>& table = train::TrainOptionTable();
  flags->text.resize(table.size());
  flags->added.assign(table.size(), false);
  size_t added = 0;
  for (size_t i = 0; i < table.size(); ++i) {
    const train::TrainOption& option = table[i];
    if (!only.empty() && std::find(only.begin(), only.end(), option.name) == only.end()) continue;
    ++added;
    flags->added[i] = true;
    CLI::Option* opt = app.add_option("--" + option.name, flags->text[i], option.help);
    if (const std::string shown = option.text(defaults); !shown.empty()) opt->default_str(shown);
    opt->check(StatusCheck(
        [&option](const std::string& text) {
          train::TrainOptions scratch;
          return option.parse_value(text, &scratch);
        },
        option.type));
    if (option.type == "PATH") opt->check(NonEmpty());
  }
  SKIFF_CHECK_MSG(only.empty() || added == only.size(), "AddTrainFlags: an unknown option name");
}

std::function<bool(const std::string&)> GivenIn(const CLI::App& app) {
  return [&app](const std::string& name) {
    const CLI::Option* option = app.get_option_no_throw(name);
    return option != nullptr && option->count() > 0;
  };
}

Status ApplyTrainFlags(const TrainFlags& flags,
                       const std::function<bool(const std::string&)>& given,
                       const std::string& resume_path, train::TrainOptions* options) {
  const std::vector<train::TrainOption>& table = train::TrainOptionTable();
  SKIFF_CHECK(flags.text.size() == table.size() && flags.added.size() == table.size());
  for (size_t i = 0; i < table.size(); ++i) {
    const train::TrainOption& option = table[i];
    if (!flags.added[i] || !given("--" + option.name)) continue;
    if (!resume_path.empty() && option.scope == train::OptionScope::kRun) {
      LogWarning("--" + option.name +
                 " is ignored with --resume: the run continues with the value saved in " +
                 resume_path + " (start a new run to change it)");
      continue;
    }
    SKIFF_RETURN_IF_ERROR(option.Parse(flags.text[i], options));
  }
  return Status::Ok();
}

}  // namespace skiff::cli
