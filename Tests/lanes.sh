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
