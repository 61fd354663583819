#include "sections/key_reader.h"

#include "sections/sections.h"
#include "util/error.h"
#include "util/spellcheck.h"

namespace tally {
namespace {

// A key is found in the first section whose table spells it; -1 section when none does.
std::pair<int, int> Locate(const std::vector<std::unique_ptr<SectionReader>>& sections, const std::string& key,
                           std::string& entry) {
  for (size_t s = 0; s < sections.size(); ++s) {
    const int row = sections[s]->Find(key, entry);
    if (row >= 0) return {static_cast<int>(s), row};
  }
  return {-1, -1};
}

}  // namespace

std::vector<std::unique_ptr<SectionReader>> AllSections(const TimeRequest& time) {
  std::vector<std::unique_ptr<SectionReader>> out;
  out.push_back(std::make_unique<TableReader<ModelEstimate>>(
      std::initializer_list<const KeyTable<ModelEstimate>*>{&ModelKeys(), &SettingsKeys(), &ParamsKeys(),
                                                            &CheckpointKeys(), &FlopsKeys()},
      EstimateModel));
  out.push_back(std::make_unique<TableReader<TimeEstimate>>(
      std::initializer_list<const KeyTable<TimeEstimate>*>{&TimeKeys()},
      [time](Evaluation& evaluation, const Settings& settings) {
        return settings.hardware.empty() ? TimeEstimate{} : EstimateTime(evaluation, settings, time);
      }));
  out.push_back(std::make_unique<TableReader<MemoryEstimate>>(
      std::initializer_list<const KeyTable<MemoryEstimate>*>{&MemorySettingsKeys(), &MemoryKeys()},
      [](Evaluation& evaluation, const Settings& settings) {
        return EstimateMemory(evaluation, settings, {.step = false});
      }));
  // The step's keys (its peak, the device figure, whether it fits) walk the step: their own reader,
  // so that a sweep of ledger keys does not.
  out.push_back(std::make_unique<TableReader<MemoryEstimate>>(
      std::initializer_list<const KeyTable<MemoryEstimate>*>{&MemoryStepKeys()},
      [](Evaluation& evaluation, const Settings& settings) { return EstimateMemory(evaluation, settings); }));
  return out;
}

bool KeyReader::Known(const std::string& key) {
  std::string entry;
  return Locate(AllSections(), key, entry).first >= 0;
}

KeyReader::KeyReader(Evaluation& evaluation, const std::vector<std::string>& keys, const TimeRequest& time)
    : evaluation_(evaluation), sections_(AllSections(time)) {
  for (const std::string& key : keys) {
    Slot slot;
    const auto [section, row] = Locate(sections_, key, slot.entry);
    if (section < 0) {
      std::vector<std::string> known;
      for (const auto& s : sections_) s->Keys(known);
      throw InputError("--keys: unknown key '" + key + "'" + DidYouMean(key, known) +
                       "; 'tally estimate MODEL --format json' shows every key");
    }
    slot.section = static_cast<size_t>(section);
    slot.row = row;
    slots_.push_back(std::move(slot));
  }
}

void KeyReader::Read(const Settings& settings, std::vector<Cell>& out) {
  for (const auto& s : sections_) s->Reset();
  out.resize(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& slot = slots_[i];
    out[i] = sections_[slot.section]->Get(slot.row, slot.entry, evaluation_, settings);
  }
}

}  // namespace tally
