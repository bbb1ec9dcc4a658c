// Tests of `qgpu model ...` (harness/cli/cmd_model.cpp), run as a user runs it: the qgpu binary
// on checkpoints written here, checking exit code, stdout and stderr. Expected values are worked
// by hand from the bytes involved, not taken from the code under test.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "model/safetensors.h"
#include "model/tiny.h"

namespace qgpu::model {
namespace {

namespace fs = std::filesystem;

struct CliRun {
  int exit = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ModelCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = (fs::temp_directory_path() / ("qgpu_cli_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  // Runs qgpu with `args` (shell words), bounded by `timeout` so a hang fails instead of blocking.
  CliRun qgpu(const std::string& args) {
    const std::string out = dir + "/stdout", err = dir + "/stderr";
    std::string cmd = "timeout 60 " + std::string(QGPU_BINARY) + " " + args + " >" + out + " 2>" + err;
    int status = std::system(cmd.c_str());
    CliRun r;
    r.exit = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }
  std::string tiny(const std::string& name, const std::string& flags) {
    CliRun r = qgpu("model tiny " + dir + "/" + name + " " + flags);
    EXPECT_EQ(r.exit, 0) << r.err;
    return dir + "/" + name;
  }
  std::string dir;
};

// The tiny model of seed 3 continues ids 200,100,50 with bytes 8c 99 e9 eb eb eb eb a3: none of
// them is (part of) well-formed UTF-8 (8c, 99, a3 are lone continuation bytes; e9 and eb are lead
// bytes followed by a non-continuation byte), so the text is eight U+FFFD.
TEST_F(ModelCli, JsonGenerateEncodesBytesThatAreNotUtf8) {
  std::string ck = tiny("s3", "--hidden 32 --layers 2 --vocab 256 --seed 3");
  CliRun r = qgpu("--json model generate " + ck + " --ids 200,100,50 -n 8");
  ASSERT_EQ(r.exit, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  std::vector<int64_t> tokens = j["tokens"];
  ASSERT_EQ(tokens, (std::vector<int64_t>{0x8c, 0x99, 0xe9, 0xeb, 0xeb, 0xeb, 0xeb, 0xa3}))
      << "the generator or decoder changed; pick another seed whose output is not UTF-8";
  EXPECT_EQ(j["text_hex"], "8c99e9ebebebeba3");
  EXPECT_EQ(j["text_is_utf8"], false);
  std::string fffd8;
  for (int i = 0; i < 8; ++i) fffd8 += "\xef\xbf\xbd";
  EXPECT_EQ(j["text"], fffd8);
}

TEST_F(ModelCli, TextGenerateEscapesBytesThatAreNotPrintable) {
  std::string ck = tiny("s3", "--hidden 32 --layers 2 --vocab 256 --seed 3");
  CliRun r = qgpu("model generate " + ck + " --ids 200,100,50 -n 8");
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_NE(r.out.find("text     \\x8c\\x99\\xe9\\xeb\\xeb\\xeb\\xeb\\xa3\n"), std::string::npos) << r.out;
}

TEST_F(ModelCli, UsageErrorsSayWhatIsWrong) {
  std::string ck = tiny("t", "--hidden 32 --layers 2 --vocab 64");
  CliRun zero = qgpu("model generate " + ck + " --ids 1 -n 0");
  EXPECT_EQ(zero.exit, 2);
  EXPECT_NE(zero.err.find("Value 0 not in range 1 to 65536"), std::string::npos) << zero.err;
  EXPECT_LT(zero.err.size(), 200u) << "no 300-digit range";
  CliRun both = qgpu("model generate " + ck + " --ids 1 --prompt x");
  EXPECT_EQ(both.exit, 2);
  EXPECT_NE(both.err.find("excludes"), std::string::npos) << both.err;
  CliRun one = qgpu("model generate " + ck + " --ids 1 -n 1");  // the twin
  EXPECT_EQ(one.exit, 0) << one.err;
}

TEST_F(ModelCli, TinyHonoursJson) {
  CliRun r = qgpu("--json model tiny " + dir + "/j --hidden 32 --layers 2 --vocab 64 --seed 9 --f16");
  ASSERT_EQ(r.exit, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["seed"], 9);
  EXPECT_EQ(j["storage"], "F16");
  EXPECT_TRUE(fs::exists(dir + "/j/model.safetensors"));
}

// info and generate share planLoad: a config whose vocab disagrees with the tensors is refused by
// both with the same message (info used to print it).
TEST_F(ModelCli, InfoRefusesWhatGenerateRefuses) {
  std::string ck = tiny("v", "--hidden 32 --layers 2 --vocab 64");
  auto config = readConfig(ck);
  ASSERT_TRUE(config.ok());
  config->vocabSize = 1000;
  ASSERT_TRUE(writeConfig(ck, *config).ok());
  CliRun info = qgpu("model info " + ck), gen = qgpu("model generate " + ck + " --ids 1 -n 1");
  EXPECT_EQ(info.exit, 2);
  EXPECT_EQ(gen.exit, 2);
  const char* why = "error[Checkpoint]: tensor 'model.embed_tokens.weight' has shape [64, 32], config implies [1000, 32]";
  EXPECT_NE(info.err.find(why), std::string::npos) << info.err;
  EXPECT_NE(gen.err.find(why), std::string::npos) << gen.err;
}

TEST_F(ModelCli, ExtraTensorsAreIgnoredWithAWarningInInfoAndGenerate) {
  std::string ck = tiny("x", "--hidden 32 --layers 2 --vocab 64");
  auto tensors = tinyTensors(TinySpec{tinyConfig(32, 2, 64), 1});
  tensors.push_back({"model.layers.0.linear_attn.conv1d.bias", StDtype::F32, {2}, std::vector<uint8_t>(8)});
  ASSERT_TRUE(writeCheckpointTensors(ck, tensors).ok());
  for (const std::string& cmd : {"model info " + ck, "model generate " + ck + " --ids 1 -n 1"}) {
    CliRun r = qgpu(cmd);
    EXPECT_EQ(r.exit, 0) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find("qgpu: warning: ignoring 1 tensor "), std::string::npos) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find("model.layers.0.linear_attn.conv1d.bias"), std::string::npos) << r.err;
  }
  CliRun j = qgpu("--json model info " + ck);
  auto doc = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << j.out;
  EXPECT_EQ(doc["ignored_tensors"], nlohmann::json::array({"model.layers.0.linear_attn.conv1d.bias"}));
}

// One NaN weight: info reports it (a warning, exit 0), generate stops with a Checkpoint error at
// step 0 naming the position and the weight.
TEST_F(ModelCli, NonFiniteWeightsAreReportedAndStopGeneration) {
  std::string ck = tiny("n", "--hidden 32 --layers 2 --vocab 64");
  auto tensors = tinyTensors(TinySpec{tinyConfig(32, 2, 64), 1});
  for (auto& t : tensors)
    if (t.name == "model.norm.weight") {
      float nan = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(t.data.data(), &nan, 4);
    }
  ASSERT_TRUE(writeCheckpointTensors(ck, tensors).ok());
  CliRun info = qgpu("model info " + ck);
  EXPECT_EQ(info.exit, 0) << info.err;
  EXPECT_NE(info.err.find("1 weight tensor hold NaN or infinite values: model.norm.weight (1)"), std::string::npos)
      << info.err;
  CliRun gen = qgpu("model generate " + ck + " --ids 1,2 -n 4");
  EXPECT_EQ(gen.exit, 2);
  EXPECT_NE(gen.err.find("error[Checkpoint]: generate step 0: non-finite logits at sequence position 1"),
            std::string::npos) << gen.err;
  EXPECT_EQ(gen.out.find("tokens"), std::string::npos) << "no token may be printed";
}

// stat() before mmap/read: each is a typed Io error, at once.
TEST_F(ModelCli, CheckpointFilesThatAreNotRegularFilesAreIoErrors) {
  std::string ck = tiny("f", "--hidden 32 --layers 2 --vocab 64");
  fs::remove(ck + "/model.safetensors");
  fs::create_directories(ck + "/model.safetensors");
  CliRun d = qgpu("model info " + ck);
  EXPECT_EQ(d.exit, 2);
  EXPECT_NE(d.err.find("model.safetensors: error[Io]: cannot read safetensors file: it is a directory"), std::string::npos) << d.err;
  fs::remove(ck + "/model.safetensors");
  ASSERT_EQ(::mkfifo((ck + "/model.safetensors").c_str(), 0600), 0);
  CliRun f = qgpu("model generate " + ck + " --ids 1 -n 1");
  EXPECT_EQ(f.exit, 2);
  EXPECT_NE(f.err.find("error[Io]: cannot read safetensors file: it is a FIFO"), std::string::npos) << f.err;
  fs::remove(ck + "/config.json");
  fs::create_symlink("/dev/zero", ck + "/config.json");
  CliRun z = qgpu("model info " + ck);
  EXPECT_EQ(z.exit, 2);
  EXPECT_NE(z.err.find("config.json: error[Io]: cannot read checkpoint file: it is a character device"), std::string::npos) << z.err;
}

}  // namespace
}  // namespace qgpu::model
