/** What a picture's header tells: its format and its size in pixels. */
export interface ImageInfo {
  mimeType: 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';
  width: number;
  height: number;
}
