# shellcheck shell=bash
# The board suites of each lane, as swift-testing filters (Tests/run says
# why each suite runs where it does; bench/board-lanes times lane A).
# shellcheck disable=SC2034  # (read by the scripts that source this)

# The watches: in the slow lane only, unless --full.
health_suites='/PictureBoardTests/|/PressureBoardTests/|/SoundBoardTests/'
# The power cut, slowed, in the slow lane.
slow_power_cut='/PowerCutBoardTests/'
# With --full, these slowed too.
slow_suites='/RecordingBoardTests/aKilledVimcRecordingPlays|/PhotoBoardTests/'
slow_suites+='|/EncoderBoardTests/withoutAHardwareH264EncoderTheRecordingFallsBackAndSaysWhy'
slow_suites+='|/EncoderBoardTests/fileFramesInDmabufsGoIntoTheEncoderWithoutACopy|/OverlayBoardTests/thePreviewShowsTheCaptionOnlyWhenAsked'
slow_suites+='|/PreviewBoardTests/theCameraFrameIsOnScreenInEachGravityAndRotation'
slow_suites+='|/PhotoWhileRecordingBoardTests/|/PaceBoardTests/'
# After both lanes, alone on boards with two CPUs.
alone='/AudioBoardTests/|/PowerCutBoardTests/'
# Lane A; lane B runs every board suite that is in none of these.
lane_a='/DriveBoardTests/|/ReadmeExamplesBoardTests/|/ButtonBoardTests/|/TimeBoardTests/'
lane_a+='|/PaceBoardTests/|/PhotoWhileRecordingBoardTests/|/PreviewBoardTests/|/BlockingStorageBoardTests/'
lane_a+='|/RecordingBoardTests/|/AnnouncedFilesBoardTests/|/EncoderBoardTests/'

# Unit suites that measure this test process itself (its descriptors,
# threads or memory, which other tests running beside would change): run
# alone, one test at a time, after the others have run in parallel.
measures_process='EncoderLeakTests|LifetimeTests|ThreadOwnershipTests'
# The quick tier's long loops: each a whole suite that repeats one thing
# many times (seconds each on this machine's two cores, serially).
long_loops='EncryptedKillTests|CrashSafetyTests|HostileInputTests|ServiceProcessTests|DiskFullTests'
# The quick tier's shards: unit suites run in processes of their own at
# once, each process one test at a time. (In one process, tests in parallel
# share its cooperative threads, as many as the cores: a test that waits on
# a program it ran holds one, and the others' awaits starve behind it.) The
# last shard runs every suite not named here, new ones too; the named ones
# are the longest, spread so that each shard takes about as long.
quick_shards=(
    'LiveServiceTests'
    'TornFragmentTests|PreRecordTests|EncoderStageTests|CommandLineTests|PhotoOutputTests|CaptureSessionTests'
    'ServicePressureTests|ServicePictureTests|TimelineTests|MetricsTests|EncoderDelayTests|MovieFileOutputTests|AudioRecordingTests'
    'WholeFragmentsTests|OverlayTests|ClosedOutputTests'
)
# suites NAMES: a filter for the suites NAMES (A|B|…) and nothing else
# (a suite's tests are named ObscuraTests.SUITE/TEST).
suites() { printf '\\.(%s)/' "$1"; }
