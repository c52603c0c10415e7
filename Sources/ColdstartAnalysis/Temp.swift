public enum TimelineTemp {}
